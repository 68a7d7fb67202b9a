import type { Static, TSchema } from '@sinclair/typebox';
import type { AuditContext } from '../domain/audit.js';
import type { Principal } from '../services/principal.js';
import type { Tag } from './openapi-tags.js';

/** `optional`: a request without Authorization runs unauthenticated; one with it must authenticate. */
export type AuthMode = 'none' | 'any' | 'optional';

export interface RouteInput<Body, Query, Caller> {
  body: Body;
  query: Query;
  params: Record<string, string>;
  principal: Caller;
  clientIp: string;
  /** The X-Request-Id this request is answered with. */
  requestId: string;
  /** Who makes the change, from where, in which request: what a state-changing service records in the audit log. */
  audit: Caller extends Principal ? AuditContext : undefined;
  /** The version named by If-Match, when the route reads it and the request sent one. */
  expectedVersion: number | undefined;
  /** Where a server-sent event stream resumes, when the route reads Last-Event-ID. */
  lastEventId: string | undefined;
}

export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Request headers a route may read: only these are parsed for it, and the document declares them as its parameters. */
export type RequestHeader = 'If-Match' | 'Last-Event-ID';

/** Response headers a handler sets itself (error headers come from the catalogue, X-Request-Id from the request log). */
export type ResultHeader = 'ETag' | 'Location';

export interface ResponseSpec {
  description: string;
  schema?: TSchema;
  /** The body's media type when it is not JSON (a server-sent event stream: `text/event-stream`). */
  contentType?: string;
  headers?: ResultHeader[];
}

/**
 * One endpoint: its schemas validate the request, type the handler's input and feed the
 * OpenAPI document, so the three never drift apart.
 */
export interface RouteSpec<B extends TSchema = TSchema, Q extends TSchema = TSchema, A extends AuthMode = AuthMode> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Koa-style path under /v1, e.g. `/agents/:id`. */
  path: string;
  /** The operation's name in generated clients: camelCase, verb then resource (`listAgents`, `rollbackAgent`), unique. */
  operationId: string;
  /** The resource it belongs to: the document's tag, the reference page's section. */
  tag: Tag;
  /** A short title (`Create an agent`); `description` says what it does and what to know. */
  summary: string;
  description: string;
  auth: A;
  /** Writes are refused to viewers. */
  writes?: boolean;
  /** If-Match: the change applies only to that agent version (412 otherwise). Last-Event-ID: a stream resumes after it. */
  reads?: RequestHeader[];
  body?: B;
  query?: Q;
  responses: Record<number, ResponseSpec>;
  handler: (input: RouteInput<Static<B>, Static<Q>, A extends 'none' ? undefined : A extends 'optional' ? Principal | undefined : Principal>) => Promise<RouteResult>;
}

/** Keeps each route's generic types while collecting routes of different shapes in one list. */
export const defineRoute = <B extends TSchema, Q extends TSchema, A extends AuthMode>(spec: RouteSpec<B, Q, A>) =>
  spec as unknown as RouteSpec;
