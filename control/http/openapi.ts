import type { TSchema } from '@sinclair/typebox';
import { ErrorBody } from '../schemas/common.js';
import { HEADERS, operationResponses, PARAMETERS } from './openapi-responses.js';
import { TAGS, type Tag } from './openapi-tags.js';
import { RELEASE_LICENSE } from './release.js';
import type { RouteSpec } from './route.js';

type JsonObject = Record<string, unknown>;

/** What the document says of the API beyond its routes. */
export interface DocumentSettings {
  /** Where paths are relative to, ending in /v1: PUBLIC_API_URL's, or a relative `/v1`. */
  serverUrl: string;
  /** The platform's release (package.json), as info.version. */
  version: string;
}

/** A generated client's method name: camelCase letters and digits, starting with a verb in lower case. */
const OPERATION_ID = /^[a-z][a-zA-Z0-9]*$/;

/**
 * The OpenAPI 3.1 document (paths relative to the server URL, which ends in /v1), made from the same route list and JSON Schemas that
 * validate requests. Schemas with an `$id` become components and are referenced.
 */
export function buildOpenApi(routes: RouteSpec[], referenced: TSchema[], settings: DocumentSettings): JsonObject {
  assertOperationIds(routes);
  const components: Record<string, unknown> = {};
  const collect = (schema: TSchema): unknown => toOpenApi(schema, components);
  // Schemas only reached through Type.Ref must be registered by hand.
  for (const schema of [ErrorBody, ...referenced]) collect(schema);

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    const operation: JsonObject = {
      operationId: route.operationId,
      tags: [route.tag],
      summary: route.summary,
      description: route.description,
      // Public operations say so: no security requirement overrides the document's bearer default.
      security: route.auth === 'none' ? [] : route.auth === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }],
      parameters: [
        ...[...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
        ...queryParameters(route.query),
        ...(route.reads ?? []).map((header) => ({ $ref: `#/components/parameters/${header}` })),
        ...(route.auth === 'none' ? [] : [{ $ref: '#/components/parameters/X-Account-Id' }]),
      ],
      responses: operationResponses(route, collect),
    };
    if (route.body) operation.requestBody = { required: true, content: { 'application/json': { schema: collect(route.body) } } };
    (paths[path] ??= {})[route.method] = operation;
  }

  const used = new Set(routes.map((route) => route.tag));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent hosting platform control API',
      version: settings.version,
      description: DESCRIPTION,
      license: RELEASE_LICENSE,
    },
    servers: [{ url: settings.serverUrl, description: settings.serverUrl.startsWith('/') ? 'This control API (relative to where this document was fetched)' : 'This control API' }],
    security: [{ bearer: [] }],
    tags: (Object.keys(TAGS) as Tag[]).filter((tag) => used.has(tag)).map((tag) => ({ name: tag, description: TAGS[tag] })),
    paths,
    components: {
      schemas: components,
      headers: HEADERS,
      parameters: PARAMETERS,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: "A personal API key (agnt_…) or a session token; the request acts in the user's default account, or in the one X-Account-Id names" } },
    },
  };
}

const DESCRIPTION = [
  'Create, deploy, scale and observe AI agents that run as containers behind the platform\'s edge, each at its own URL.',
  '',
  'Authenticate with `Authorization: Bearer <token>`: a session token from `login` or `register`, or a personal API key (`agnt_…`).',
  "A request acts in the user's default account, or in another they belong to named by `X-Account-Id`.",
  'Errors are `{error: {code, message, details}}` with a code from a fixed catalogue; every response carries `X-Request-Id`.',
  'Changes to an agent may name the version they apply to in `If-Match` (its `ETag`).',
].join('\n');

/** Generated clients name their methods by operationId: each must be one, and only one operation's. */
function assertOperationIds(routes: RouteSpec[]): void {
  const seen = new Set<string>();
  for (const { operationId, method, path } of routes) {
    if (!OPERATION_ID.test(operationId)) throw new Error(`${method.toUpperCase()} ${path}: operationId "${operationId}" is not camelCase letters and digits`);
    if (seen.has(operationId)) throw new Error(`${method.toUpperCase()} ${path}: operationId "${operationId}" is used twice`);
    seen.add(operationId);
  }
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
