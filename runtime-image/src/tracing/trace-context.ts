import { randomBytes } from 'node:crypto';

/** Where an invoke's trace continues from: the caller's (the edge's) trace and span. */
export interface TraceParent {
  traceId: string;
  spanId: string;
}

// W3C Trace Context, version 00: version-traceid-parentid-flags, all lowercase hex.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ALL_ZERO = /^0+$/;

/**
 * The parent named by a `traceparent` header, or undefined when there is none or it is
 * not a valid version-00 one (then the invoke starts a trace of its own, as the
 * specification asks of a receiver that cannot parse the header).
 */
export function parseTraceParent(header: string | string[] | undefined): TraceParent | undefined {
  if (typeof header !== 'string') return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (match === null) return undefined;
  const [, traceId, spanId] = match as unknown as [string, string, string];
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId };
}

/** The header naming `spanId` as the parent of what follows; sampled, since the runtime records every invoke. */
export function formatTraceParent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

export const newTraceId = (): string => nonZeroHex(16);
export const newSpanId = (): string => nonZeroHex(8);

function nonZeroHex(bytes: number): string {
  for (;;) {
    const id = randomBytes(bytes).toString('hex');
    if (!ALL_ZERO.test(id)) return id;
  }
}

const startedAtNs = BigInt(Date.now()) * 1_000_000n;
const startedAtHr = process.hrtime.bigint();

/** Nanoseconds since the epoch: the wall clock at start plus a monotonic clock since, so span durations never go negative. */
export function nowNanos(): bigint {
  return startedAtNs + (process.hrtime.bigint() - startedAtHr);
}
