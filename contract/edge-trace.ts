import { randomFillSync } from 'node:crypto';
import type { Redis } from 'ioredis';
import { runPipeline } from './redis-pipeline.js';

/**
 * The edge's part of an invoke's trace (issue 38): it starts the trace, or continues the
 * caller's, and its span is the root the replica's spans join.
 *
 * - authz decides the context in each allowed Check (edgeTraceOf) and gives it to the
 *   replica as a W3C `traceparent` naming the edge's span as parent, and to Envoy's access
 *   log as ext_authz metadata (authz/check-response.ts).
 * - When the answer is over, the edge's span (EdgeSpan) is made from the access-log entry
 *   (authz/access-log-entry.ts) or, on the local edge, from the request itself, and queued
 *   in Redis (createEdgeSpanRecorder); the control API takes the queue into the agent's
 *   traces (control/services/edge-span-intake.ts).
 */

export interface EdgeTraceContext {
  /** 32 lowercase hex digits, never all zero. */
  traceId: string;
  /** The edge's span: 16 lowercase hex digits, never all zero. */
  spanId: string;
  /** The caller's span when it sent a traceparent; null when the edge started the trace. */
  parentSpanId: string | null;
  /** The trace-flags byte the caller sent (the sampled bit above all), or 01 for a trace the edge starts. */
  flags: string;
}

/** W3C Trace Context, version 00: `00-<trace id>-<parent id>-<flags>`; a later version's longer value starts the same way (§ "Versioning"). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** Envoy's x-request-id: a random (version 4) UUID, whose hex digits make a good trace id. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function formatTraceParent(context: EdgeTraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`;
}

/**
 * The caller's trace continued when its `traceparent` is valid (W3C Trace Context §3.2:
 * version ff, an all-zero id or a version 00 value with more fields is invalid, and the
 * edge then starts a trace); else a new trace whose id is the request id's digits, so an
 * answer's `x-request-id` names its invocation. The edge's span id is always new.
 */
export function edgeTraceOf(traceparent: string | undefined, requestId: string | undefined, newSpanId: () => string = randomSpanId): EdgeTraceContext {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim());
  if (match && match[1] !== 'ff' && match[2] !== ZERO_TRACE && match[3] !== ZERO_SPAN && !(match[1] === '00' && match[5] !== undefined)) {
    return { traceId: match[2]!, spanId: newSpanId(), parentSpanId: match[3]!, flags: match[4]! };
  }
  const fromRequest = requestId !== undefined && UUID.test(requestId) ? requestId.replaceAll('-', '') : undefined;
  const traceId = fromRequest && fromRequest !== ZERO_TRACE ? fromRequest : randomHex(16);
  return { traceId, spanId: newSpanId(), parentSpanId: null, flags: '01' };
}

// Span ids from a pooled buffer: one randomFillSync per 512 ids, not one per allowed Check.
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const hex = POOL.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return /^0+$/.test(hex) ? randomHex(bytes) : hex;
}

export const randomSpanId = (): string => randomHex(8);

/** The path of the request the runtime traces (docs/contract.md, runtime contract v1): only its edge span is recorded. */
export const TRACED_PATH = '/invoke';

/** Whether a request's path (its query aside) is TRACED_PATH. */
export const isTracedPath = (path: string): boolean => path === TRACED_PATH || path.startsWith(`${TRACED_PATH}?`);

/** The ext_authz metadata keys authz puts the context of an allowed request under (authz/check-response.ts); the access log and the local edge read them back. */
export const TRACE_METADATA_KEYS = { traceId: 'trace_id', spanId: 'span_id', parentSpanId: 'parent_span_id' } as const;

/** What the edge saw of one request an agent answered, queued as JSON. */
export interface EdgeSpan {
  agentId: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  /** When the edge got the request, in milliseconds since the epoch (fractions kept). */
  startMs: number;
  /** Until the answer's last byte went out. */
  durationMs: number;
  method: string;
  /** Without its query: a query may carry what is not the platform's to keep. */
  path: string;
  status: number;
  requestId: string;
  canary: boolean;
}

export interface EdgeSpanSink {
  /** Queues the span for the next flush; no I/O. */
  record(span: EdgeSpan): void;
}

export interface EdgeSpanRecorder extends EdgeSpanSink {
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Not hash-tagged: one list, LPUSHed by every edge process, RPOPed by the control API. */
export const EDGE_SPANS_KEY = 'edge:spans';
/** The list's length past which the oldest spans are trimmed: while no control API drains it, Redis holds at most this. */
export const EDGE_SPANS_BACKLOG = 100_000;
/** Spans one process holds between flushes; past it a span is dropped (and told), so a Redis outage costs bounded memory. */
export const EDGE_SPANS_BUFFER = 10_000;

export interface EdgeSpanRecorderOptions {
  /** Carries the installation's REDIS_KEY_PREFIX. */
  redis: Redis;
  /** Told when a flush fails: its spans are dropped, never retried. */
  onError: (error: Error) => void;
  /** Told of each span the buffer had no room for. */
  onDropped?: () => void;
  /** Default 1 s. */
  flushIntervalMs?: number;
}

/** Buffers spans and pushes them to EDGE_SPANS_KEY once a second, in one pipeline, trimming the list to its backlog. */
export function createEdgeSpanRecorder(options: EdgeSpanRecorderOptions): EdgeSpanRecorder {
  let pending: string[] = [];

  async function flush(): Promise<void> {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    await runPipeline(options.redis.pipeline().lpush(EDGE_SPANS_KEY, ...batch).ltrim(EDGE_SPANS_KEY, 0, EDGE_SPANS_BACKLOG - 1), options.onError);
  }

  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? 1_000);
  timer.unref();

  return {
    record(span) {
      if (pending.length >= EDGE_SPANS_BUFFER) {
        options.onDropped?.();
        return;
      }
      pending.push(JSON.stringify(span));
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

const HEX_32 = /^[0-9a-f]{32}$/;
const HEX_16 = /^[0-9a-f]{16}$/;
const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A queued span read back, or undefined when it is not one (a foreign or corrupted entry is skipped, not trusted). */
export function parseEdgeSpan(text: string): EdgeSpan | undefined {
  let value: Partial<EdgeSpan>;
  try {
    value = JSON.parse(text) as Partial<EdgeSpan>;
  } catch {
    return undefined;
  }
  const ok = typeof value === 'object' && value !== null
    && typeof value.agentId === 'string' && AGENT_ID.test(value.agentId)
    && typeof value.traceId === 'string' && HEX_32.test(value.traceId)
    && typeof value.spanId === 'string' && HEX_16.test(value.spanId)
    && (value.parentSpanId === null || (typeof value.parentSpanId === 'string' && HEX_16.test(value.parentSpanId)))
    && Number.isFinite(value.startMs) && Number.isFinite(value.durationMs) && value.durationMs! >= 0
    && typeof value.method === 'string' && typeof value.path === 'string' && Number.isInteger(value.status)
    && typeof value.requestId === 'string' && typeof value.canary === 'boolean';
  return ok ? (value as EdgeSpan) : undefined;
}
