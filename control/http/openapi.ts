import type { TSchema } from '@sinclair/typebox';
import { ErrorBody } from '../schemas/common.js';
import { HEADERS, operationResponses, PARAMETERS } from './openapi-responses.js';
import type { RouteSpec } from './route.js';

type JsonObject = Record<string, unknown>;

/**
 * The OpenAPI 3.1 document (paths relative to the server URL, which ends in /v1), made from the same route list and JSON Schemas that
 * validate requests. Schemas with an `$id` become components and are referenced.
 */
export function buildOpenApi(routes: RouteSpec[], referenced: TSchema[], serverUrl: string): JsonObject {
  const components: Record<string, unknown> = {};
  const collect = (schema: TSchema): unknown => toOpenApi(schema, components);
  // Schemas only reached through Type.Ref must be registered by hand.
  for (const schema of [ErrorBody, ...referenced]) collect(schema);

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    const operation: JsonObject = {
      summary: route.summary,
      tags: [route.tag],
      operationId: `${route.method}${path.replace(/[{}]/g, '').replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`,
      // Public operations say so: no security requirement overrides the document's bearer default.
      security: route.auth === 'none' ? [] : [{ bearer: [] }],
      parameters: [
        ...[...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
        ...queryParameters(route.query),
        ...(route.reads ?? []).map((header) => ({ $ref: `#/components/parameters/${header}` })),
      ],
      responses: operationResponses(route, collect),
    };
    if (route.body) operation.requestBody = { required: true, content: { 'application/json': { schema: collect(route.body) } } };
    (paths[path] ??= {})[route.method] = operation;
  }

  return {
    openapi: '3.1.0',
    info: { title: 'Agent hosting platform control API', version: '1' },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: components,
      headers: HEADERS,
      parameters: PARAMETERS,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A personal API key (agnt_…) or a session token' } },
    },
  };
}

function queryParameters(schema: TSchema | undefined): JsonObject[] {
  if (!schema) return [];
  const required = new Set<string>((schema.required as string[] | undefined) ?? []);
  return Object.entries(schema.properties as Record<string, TSchema>).map(([name, property]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema: strip(property),
  }));
}

/**
 * A schema as plain JSON whose $refs point into components; a schema with an `$id` is
 * registered there (with what it references) and referenced instead of inlined.
 */
function toOpenApi(schema: TSchema, components: Record<string, unknown>): unknown {
  const plain = rewriteRefs(strip(schema)) as JsonObject;
  if (typeof plain.$id !== 'string') return plain;
  const { $id, ...rest } = plain;
  components[$id] = rest;
  return { $ref: `#/components/schemas/${$id}` };
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node as JsonObject).map(([key, value]) =>
      key === '$ref' && typeof value === 'string' ? [key, `#/components/schemas/${value}`] : [key, rewriteRefs(value)],
    ),
  );
}

/** TypeBox marks schemas with symbol keys; JSON round-tripping leaves only the JSON Schema. */
const strip = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema));
