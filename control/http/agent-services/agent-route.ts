import type Router from '@koa/router';
import type { Static, TSchema } from '@sinclair/typebox';
import type { AgentCredential } from '../../crypto/agent-token.js';
import type { MessagesBudget } from '../../domain/agent-session.js';
import { PlatformError, validationError } from '../../domain/errors.js';
import { readBodyBytes, readJsonBody, type BodyLimit } from '../json-body.js';
import { compileValidator, type Validator } from '../validation.js';

export interface AgentRouteInput<Body> {
  /** The caller's agent and replica, from its token: what every route is scoped to. */
  credential: AgentCredential;
  params: Record<string, string>;
  body: Body;
  /** The request's headers, lower-cased. */
  headers: Record<string, string | string[] | undefined>;
  /** In a batch, what its answer may still carry of sessions' messages (batch-route.ts). */
  answerBudget?: MessagesBudget;
}

export interface AgentRouteResult {
  status: number;
  headers?: Record<string, string>;
  /** Serialised as JSON, unless it is text already JSON (a session's messages, sent as they were stored). */
  body?: unknown;
  jsonText?: string;
}

/**
 * An encoding a route takes besides JSON, chosen by the request's Content-Type and answered
 * in kind: OTLP/HTTP protobuf for traces. `decode` gives the JSON form the route's schema
 * checks; `encode` turns the handler's JSON-form answer back.
 */
export interface BodyEncoding {
  contentType: string;
  /** What the body is, for the error when it is not that. */
  describes: string;
  decode(bytes: Uint8Array): unknown;
  encode(body: unknown): Uint8Array;
}

/** One endpoint of the agent services API (docs/contract.md, "Sessions API v1"). */
export interface AgentRoute<B extends TSchema = TSchema> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Koa-style, under /v1. */
  path: string;
  body?: B;
  /** How large its body may be; the sessions' limit (SESSION_MAX_BYTES and room) unless given. */
  limit?: BodyLimit;
  /** What a body that is not JSON or breaks the schema is answered with, in place of 422 VALIDATION_ERROR (OTLP wants 400). */
  invalidBody?: (error: PlatformError) => PlatformError;
  /** Taken besides JSON when the request says so; errors are still answered in JSON. */
  alternateEncoding?: BodyEncoding;
  /** Asked before the body is read: may refuse the request (a rate limit) while it costs nothing yet. */
  admit?: (credential: AgentCredential) => Promise<void>;
  handler: (input: AgentRouteInput<Static<B>>) => Promise<AgentRouteResult>;
}

/** Keeps each route's body type while collecting routes of different shapes in one list. */
export const defineAgentRoute = <B extends TSchema>(route: AgentRoute<B>) => route as unknown as AgentRoute;

/**
 * Room a body gets beyond SESSION_MAX_BYTES: its envelope (`expected_version`) and the
 * spaces a client's encoder may put between items. A body past that could not be stored
 * anyway, so it is refused before it is read whole or parsed.
 */
export const BODY_ROOM_BYTES = 64 * 1024;

/** The body limit of agent services' requests: SESSION_MAX_BYTES and BODY_ROOM_BYTES, past which a body is refused unread. */
export function agentServicesBodyLimit(maxSessionBytes: number): BodyLimit {
  const maxBytes = maxSessionBytes + BODY_ROOM_BYTES;
  return {
    maxBytes,
    tooLarge: () => new PlatformError('SESSION_TOO_LARGE', `The request body is larger than ${maxBytes} bytes; a session holds at most ${maxSessionBytes} bytes of messages`, { max_bytes: maxSessionBytes }),
  };
}

/** A route with its body's validator compiled once. */
export interface CompiledAgentRoute {
  route: AgentRoute;
  validateBody: Validator | undefined;
}

export const compileAgentRoute = (route: AgentRoute): CompiledAgentRoute => ({ route, validateBody: route.body ? compileValidator(route.body, 'body') : undefined });

/**
 * A call of a batch (batch-route.ts), its body parsed with the batch's, answered as
 * mountAgentRoutes answers it alone: admitted, its body checked (an absent one as {}, so
 * each missing required field is reported by name), handled.
 */
export async function answerAgentCall({ route, validateBody }: CompiledAgentRoute, input: AgentRouteInput<unknown>): Promise<AgentRouteResult> {
  await route.admit?.(input.credential);
  const body = validateBody ? (input.body ?? {}) : undefined;
  validateBody?.(body);
  return route.handler({ ...input, body });
}

export function mountAgentRoutes(router: Router, routes: AgentRoute[], maxSessionBytes: number): void {
  const limit = agentServicesBodyLimit(maxSessionBytes);
  for (const route of routes) {
    const compiled = compileAgentRoute(route);
    router[route.method](`/v1${route.path}`, async (ctx) => {
      const credential = ctx.state.credential as AgentCredential;
      await route.admit?.(credential);
      const encoding = route.alternateEncoding && hasContentType(ctx.get('content-type'), route.alternateEncoding.contentType) ? route.alternateEncoding : undefined;
      let body: unknown = undefined;
      if (compiled.validateBody) {
        try {
          body = encoding ? decodeBody(encoding, await readBodyBytes(ctx.req, route.limit ?? limit)) : ((await readJsonBody(ctx.req, route.limit ?? limit)) ?? {});
          compiled.validateBody(body);
        } catch (error) {
          if (route.invalidBody && error instanceof PlatformError && error.code === 'VALIDATION_ERROR') throw route.invalidBody(error);
          throw error;
        }
      }
      const result = await route.handler({ credential, params: ctx.params, body, headers: ctx.headers });
      ctx.status = result.status;
      if (result.headers) ctx.set(result.headers);
      if (encoding) {
        ctx.type = encoding.contentType;
        ctx.body = Buffer.from(encoding.encode(result.body));
      } else if (result.jsonText !== undefined) {
        ctx.type = 'application/json';
        ctx.body = result.jsonText;
      } else if (result.body !== undefined) {
        ctx.body = result.body;
      }
    });
  }
}

const hasContentType = (header: string, type: string) => header.split(';')[0]!.trim().toLowerCase() === type;

function decodeBody(encoding: BodyEncoding, bytes: Buffer): unknown {
  try {
    return encoding.decode(bytes);
  } catch (error) {
    // protobufjs throws on truncated or mistyped wire data, RangeError on nesting past the stack.
    throw validationError([{ loc: ['body'], msg: `not ${encoding.describes}: ${(error as Error).message}`, type: 'encoding_invalid' }]);
  }
}
