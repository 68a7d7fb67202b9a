import type { TSchema } from '@sinclair/typebox';
import { errorCatalogue, errorHeaders, type ErrorCode } from '../domain/errors.js';
import type { RequestHeader, RouteSpec } from './route.js';

type JsonObject = Record<string, unknown>;

/**
 * The error codes the request pipeline (control/http/app.ts and its middleware) can answer
 * a route with before or around its handler, from what the route declares. The handler's
 * own errors are in the route's `responses`; these are added so no status goes undocumented.
 */
export function pipelineCodes(route: RouteSpec): ErrorCode[] {
  // Path parameters and the query string are checked for text Postgres cannot store on every route (storable-text.ts).
  const codes: ErrorCode[] = ['VALIDATION_ERROR'];
  // The router answers another method on this path 405, with Allow (app.ts, after allowedMethods).
  codes.push('METHOD_NOT_ALLOWED');
  // A token is rate-limited in Redis and looked up in Postgres (authenticate.ts).
  if (route.auth !== 'none') codes.push('AUTHENTICATION_FAILED', 'RATE_LIMIT_EXCEEDED', 'DATABASE_UNAVAILABLE', 'CACHE_UNAVAILABLE');
  // X-Account-Id naming an account the user does not belong to is refused before the handler runs.
  if (route.auth !== 'none') codes.push('AUTHORISATION_DENIED');
  // An account that requires SSO refuses, to all but its owners, credentials from a password sign-in (services/sso-requirement.ts).
  if (route.auth !== 'none') codes.push('SSO_REQUIRED');
  // Viewers may not write; every write changes what the edge serves (an agent, its keys, the plan's limits), and the
  // projection is written inside the change's transaction (services/edge-sync.ts), so Redis away refuses it.
  if (route.writes) codes.push('AUTHORISATION_DENIED', 'EDGE_UNAVAILABLE');
  // A body is read within 1 MiB as JSON (json-body.ts), then validated, then stored or checked in Postgres.
  if (route.body) codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'DATABASE_UNAVAILABLE', 'CACHE_UNAVAILABLE');
  if (route.reads?.includes('If-Match')) codes.push('PRECONDITION_FAILED');
  return [...new Set(codes)];
}

/** What a reader of the document needs beyond the catalogue's message. */
const NOTES: Partial<Record<ErrorCode, string>> = {
  METHOD_NOT_ALLOWED: 'answered to a method this path does not serve; Allow lists those it does',
  VALIDATION_ERROR: 'the request is not valid; details.errors lists {loc, msg, type}',
  AUTHORISATION_DENIED: 'your role does not allow this operation, or X-Account-Id names an account you do not belong to (then `details.header` is `X-Account-Id`)',
};

/** Headers set outside the error middleware on an error status: @koa/router's allowedMethods sets Allow on 405. */
const ROUTER_HEADERS: Record<number, string[]> = { 405: ['Allow'] };

/** Every header the document declares, referenced from responses by name. */
export const HEADERS: Record<string, JsonObject> = {
  'X-Request-Id': { description: "This request's id (the client's own when it sent a valid one); the log lines of the request carry it", schema: { type: 'string' } },
  ETag: { description: 'The agent version, quoted (`"3"`); send it as If-Match to change only that version', schema: { type: 'string' } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } },
  'WWW-Authenticate': { description: 'The scheme to authenticate with: Bearer', schema: { type: 'string' } },
  Allow: { description: 'The methods this path serves', schema: { type: 'string' } },
  Location: { description: 'Where a redirect sends the browser (single sign-on: the identity provider, the console or a CLI)', schema: { type: 'string', format: 'uri' } },
};

/** Request headers as header parameters, referenced by name: those routes declare they read, and X-Account-Id, which every authenticated route honours (app.ts). */
export const PARAMETERS: Record<RequestHeader | 'X-Account-Id', JsonObject> = {
  'X-Account-Id': {
    name: 'X-Account-Id',
    in: 'header',
    required: false,
    description:
      "The account the request acts in (`acc_…`), one the user belongs to (GET /auth/me lists them); without it, the user's default account. " +
      'An account the user does not belong to, existing or not, is 403 AUTHORISATION_DENIED',
    schema: { type: 'string' },
  },
  'If-Match': {
    name: 'If-Match',
    in: 'header',
    required: false,
    description: 'Apply the change only if the agent is at this version (its ETag, `"3"` or `W/"3"`; `*` for any); otherwise 412 PRECONDITION_FAILED',
    schema: { type: 'string' },
  },
  'Last-Event-ID': {
    name: 'Last-Event-ID',
    in: 'header',
    required: false,
    description: 'Resume the stream after the event with this id (as EventSource sends it on reconnecting)',
    schema: { type: 'string' },
  },
};

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
const headerRefs = (names: string[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

/** The codes the catalogue answers with this status, and the headers any of them carries. */
const codesWithStatus = (status: number) => (Object.keys(errorCatalogue) as ErrorCode[]).filter((code) => errorCatalogue[code].status === status);
const errorHeadersOf = (status: number) => [...new Set([...codesWithStatus(status).flatMap((code) => errorHeaders(code)), ...(ROUTER_HEADERS[status] ?? [])])];

/**
 * The operation's responses: the route's own, joined with the pipeline's error codes by
 * status (a code the route's description already names is not repeated), each with the
 * headers it can carry, and a `default` for the 500 that reveals nothing.
 */
export function operationResponses(route: RouteSpec, collect: (schema: TSchema) => unknown): JsonObject {
  const responses: JsonObject = {};
  for (const [status, response] of Object.entries(route.responses)) {
    const isError = Number(status) >= 400;
    const names = ['X-Request-Id', ...(response.headers ?? []), ...(isError ? errorHeadersOf(Number(status)) : [])];
    responses[status] = {
      description: response.description,
      headers: headerRefs(names),
      ...(response.schema ? { content: { [response.contentType ?? 'application/json']: { schema: collect(response.schema) } } } : {}),
    };
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of pipelineCodes(route)) byStatus.set(errorCatalogue[code].status, [...(byStatus.get(errorCatalogue[code].status) ?? []), code]);
  for (const [status, codes] of byStatus) {
    const existing = responses[status] as { description: string } | undefined;
    const unnamed = codes.filter((code) => !existing?.description.includes(code));
    const added = unnamed.map((code) => `${code}: ${NOTES[code] ?? errorCatalogue[code].message}`).join('; or ');
    if (existing && unnamed.length === 0) continue;
    responses[status] = {
      description: existing ? `${existing.description}; or ${added}` : added,
      headers: headerRefs(['X-Request-Id', ...errorHeadersOf(status)]),
      content: errorContent,
    };
  }
  responses.default = {
    description: `INTERNAL_ERROR (500): ${errorCatalogue.INTERNAL_ERROR.message}; details.request_id, as X-Request-Id, finds it in the log`,
    headers: headerRefs(['X-Request-Id']),
    content: errorContent,
  };
  return responses;
}
