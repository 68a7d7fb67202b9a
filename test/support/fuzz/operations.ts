import assert from 'node:assert/strict';
import { errorCatalogue, type ErrorCode } from '../../../control/domain/errors.js';
import type { FieldPath, Resolve, Schema } from './schema-values.js';

/**
 * The control API's operations as its OpenAPI document lists them, so that a route added
 * later is fuzzed without anyone editing the fuzz test; and one request sent raw, as a
 * client on the wire would send it.
 */
export interface Operation {
  method: string;
  /** As documented, e.g. `/agents/{id}/access-keys/{keyId}`. */
  path: string;
  pathParams: string[];
  query: { name: string; schema: Schema }[];
  body: Schema | undefined;
  authenticated: boolean;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export function operationsOf(document: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const method of Object.keys(item).filter((key) => HTTP_METHODS.includes(key))) {
      const operation = item[method];
      const parameters: any[] = operation.parameters ?? [];
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        body: operation.requestBody?.content?.['application/json']?.schema,
        authenticated: (operation.security ?? []).length > 0,
      });
    }
  }
  return operations;
}

/** Follows `$ref`s into the document's components. */
export const resolverFor = (document: any): Resolve => {
  const resolve: Resolve = (schema) => {
    if (typeof schema?.$ref !== 'string') return schema;
    const name = schema.$ref.replace('#/components/schemas/', '');
    return resolve(document.components.schemas[name]);
  };
  return resolve;
};

export interface RawRequest {
  method: string;
  /** Path under /v1 and query string, already percent-encoded (or deliberately mis-encoded). */
  target: string;
  token?: string;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface RawResponse {
  status: number;
  contentType: string;
  retryAfter: string | null;
  body: any;
}

/** Sends one request; a server-sent event stream is left after its headers. */
export async function send(baseUrl: string, request: RawRequest): Promise<RawResponse> {
  const headers: Record<string, string> = { ...request.headers };
  if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`;
  if (request.contentType !== undefined) headers['content-type'] = request.contentType;
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(new Error(`no answer in 20 s: ${describe(request)}`)), 20_000);
  try {
    const response = await fetch(baseUrl + request.target, { method: request.method, headers, body: request.body, signal: abort.signal });
    const contentType = response.headers.get('content-type') ?? '';
    let body: any;
    if (contentType.startsWith('text/event-stream')) abort.abort();
    else {
      const text = await response.text();
      body = text && contentType.startsWith('application/json') ? JSON.parse(text) : text;
    }
    return { status: response.status, contentType, retryAfter: response.headers.get('retry-after'), body };
  } finally {
    clearTimeout(deadline);
  }
}

/** The request, short enough for an assertion message, to reproduce a failure by hand. */
export function describe(request: RawRequest): string {
  const body = request.body === undefined ? '' : ` body(${request.body.length})=${JSON.stringify(request.body.slice(0, 300))}`;
  return `${request.method} ${request.target.slice(0, 300)}${request.token ? '' : ' (no token)'}${body}`;
}

/**
 * 5xx answers that are the documented design, not a failure: `build_path` is refused as
 * 501 (docs/contract.md, "Errors"). Anything else of 500 and above fails the fuzz test.
 */
const DESIGNED_5XX: ReadonlySet<ErrorCode> = new Set(['BUILD_NOT_SUPPORTED']);

/** No unexpected 5xx, and every error is docs/contract.md's body: a catalogued code at its status, message, details. */
export function assertWellFormed(request: RawRequest, response: RawResponse): void {
  const shown = `${describe(request)} → ${response.status} ${JSON.stringify(response.body)?.slice(0, 500)}`;
  if (response.status >= 500) assert.ok(DESIGNED_5XX.has(response.body?.code), `server error: ${shown}`);
  if (response.status < 400) return;
  assert.match(response.contentType, /^application\/json/, shown);
  const { code, message, details } = response.body ?? {};
  assert.ok(code in errorCatalogue, `unknown code: ${shown}`);
  assert.equal(response.status, errorCatalogue[code as ErrorCode].status, `status of ${code}: ${shown}`);
  assert.equal(typeof message, 'string', shown);
  assert.ok(details !== null && typeof details === 'object' && !Array.isArray(details), shown);
  if (response.status === 422) {
    assert.ok(Array.isArray(details.errors) && details.errors.length > 0, shown);
    for (const error of details.errors) {
      assert.ok(Array.isArray(error.loc) && ['body', 'query'].includes(error.loc[0]), shown);
      assert.equal(typeof error.msg, 'string', shown);
      assert.equal(typeof error.type, 'string', shown);
    }
  }
}

/** The path with each `{param}` replaced by the given, already encoded, segment. */
export const concretePath = (operation: Operation, segments: Record<string, string>): string =>
  operation.path.replace(/\{(\w+)\}/g, (_, name: string) => segments[name] ?? 'none');

export const locOf = (where: 'body' | 'query', path: FieldPath) => JSON.stringify([where, ...path]);
