import type Router from '@koa/router';
import type { Static, TSchema } from '@sinclair/typebox';
import type { AgentCredential } from '../../crypto/agent-token.js';
import { PlatformError } from '../../domain/errors.js';
import { readJsonBody, type BodyLimit } from '../json-body.js';
import { compileValidator } from '../validation.js';

export interface AgentRouteInput<Body> {
  /** The caller's agent and replica, from its token: what every route is scoped to. */
  credential: AgentCredential;
  params: Record<string, string>;
  body: Body;
}

export interface AgentRouteResult {
  status: number;
  /** Serialised as JSON, unless it is text already JSON (a session's messages, sent as they were stored). */
  body?: unknown;
  jsonText?: string;
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

export function mountAgentRoutes(router: Router, routes: AgentRoute[], maxSessionBytes: number): void {
  const maxBytes = maxSessionBytes + BODY_ROOM_BYTES;
  const limit: BodyLimit = {
    maxBytes,
    tooLarge: () => new PlatformError('SESSION_TOO_LARGE', `The request body is larger than ${maxBytes} bytes; a session holds at most ${maxSessionBytes} bytes of messages`, { max_bytes: maxSessionBytes }),
  };
  for (const route of routes) {
    const validateBody = route.body ? compileValidator(route.body, 'body') : undefined;
    router[route.method](`/v1${route.path}`, async (ctx) => {
      let body: unknown = undefined;
      if (validateBody) {
        // An absent body is checked as {} so each missing required field is reported by name.
        try {
          body = (await readJsonBody(ctx.req, route.limit ?? limit)) ?? {};
          validateBody(body);
        } catch (error) {
          if (route.invalidBody && error instanceof PlatformError && error.code === 'VALIDATION_ERROR') throw route.invalidBody(error);
          throw error;
        }
      }
      const result = await route.handler({ credential: ctx.state.credential as AgentCredential, params: ctx.params, body });
      ctx.status = result.status;
      if (result.jsonText !== undefined) {
        ctx.type = 'application/json';
        ctx.body = result.jsonText;
      } else if (result.body !== undefined) {
        ctx.body = result.body;
      }
    });
  }
}
