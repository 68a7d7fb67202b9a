import type { TSchema } from '@sinclair/typebox';
import { ErrorBody } from '../schemas/common.js';
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
      parameters: [
        ...[...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
        ...queryParameters(route.query),
      ],
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, response]) => [
          status,
          response.schema
            ? { description: response.description, content: { [response.contentType ?? 'application/json']: { schema: collect(response.schema) } } }
            : { description: response.description },
        ]),
      ),
    };
    if (route.body) operation.requestBody = { required: true, content: { 'application/json': { schema: collect(route.body) } } };
    if (route.auth !== 'none') {
      operation.security = [{ bearer: [] }];
      (operation.responses as JsonObject)['401'] ??= { description: 'AUTHENTICATION_FAILED', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
    if (route.body || route.query) {
      (operation.responses as JsonObject)['422'] ??= { description: 'VALIDATION_ERROR: details.errors lists {loc, msg, type}', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
    // A token is looked up in Postgres and counted in Redis; a body is stored or checked there.
    if (route.auth !== 'none' || route.body) addOutageResponse(operation.responses as JsonObject);
    (paths[path] ??= {})[route.method] = operation;
  }

  return {
    openapi: '3.1.0',
    info: { title: 'Agent hosting platform control API', version: '1' },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A personal API key (agnt_…) or a session token' } },
    },
  };
}

const OUTAGE = 'DATABASE_UNAVAILABLE or CACHE_UNAVAILABLE: Postgres or Redis cannot serve now; retry after Retry-After seconds';

/** The 503 of a dependency outage, joined to a 503 the route already documents. */
function addOutageResponse(responses: JsonObject): void {
  const documented = responses['503'] as { description: string } | undefined;
  responses['503'] = {
    description: documented ? `${documented.description}; or ${OUTAGE}` : OUTAGE,
    headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } } },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
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
