/**
 * Per-agent request figures: what the edge counts of every request it forwarded to an
 * agent, and how the control API sums them (docs/contract.md, "Request figures").
 *
 * The edge adds each second of requests to one Redis hash per agent
 * (`edgeKeyNames.requestFigures`) with HINCRBY, so any number of edge processes add up;
 * the control API sums the last FIGURES_WINDOW_SECONDS of them. Both sides take the
 * field names, the latency buckets and the sums from here.
 */

/** The window GET /agents/{id}/metrics sums over. */
export const FIGURES_WINDOW_SECONDS = 60;
/** A second's hash outlives the window, plus an edge's flush delay, then expires. */
export const REQUEST_FIGURES_TTL_SECONDS = FIGURES_WINDOW_SECONDS + 15;

/**
 * Upper bounds (inclusive, in ms) of the latency buckets; one more bucket holds anything
 * slower. From a fast tool call (1 ms) to envoy.yaml's route timeout (300 s): a p95 read
 * from them is off by at most its bucket's width.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Object.freeze([
  1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000,
]);
const BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** Field names of a second's hash. Latency is summed in whole microseconds: HINCRBY takes integers. */
export const REQUEST_FIGURE_FIELDS = {
  count: 'count',
  errors: 'errors',
  latencySumUs: 'latency_us',
  /** Requests in latency bucket `index` (not cumulative); index LATENCY_BOUNDS_MS.length is the overflow. */
  bucket: (index: number) => `le_${index}`,
} as const;

/** A tally of forwarded requests: one second's, or a window's once summed. */
export interface RequestTally {
  count: number;
  /** Responses with a 5xx status from the agent. */
  errors: number;
  latencySumUs: number;
  /** Requests per latency bucket, not cumulative. */
  buckets: number[];
}

export const emptyTally = (): RequestTally => ({ count: 0, errors: 0, latencySumUs: 0, buckets: new Array<number>(BUCKETS).fill(0) });

/** The bucket of a latency: the first bound it does not exceed, or the overflow bucket. */
export function latencyBucketOf(latencyMs: number): number {
  for (let index = 0; index < LATENCY_BOUNDS_MS.length; index += 1) {
    if (latencyMs <= LATENCY_BOUNDS_MS[index]!) return index;
  }
  return LATENCY_BOUNDS_MS.length;
}

/** Adds one forwarded request; allocates nothing. */
export function addRequest(tally: RequestTally, status: number, latencyMs: number): void {
  tally.count += 1;
  if (status >= 500 && status <= 599) tally.errors += 1;
  tally.latencySumUs += Math.max(0, Math.round(latencyMs * 1000));
  tally.buckets[latencyBucketOf(latencyMs)]! += 1;
}

/** The HINCRBY increments of a tally, zeros left out. */
export function tallyIncrements(tally: RequestTally): [field: string, increment: number][] {
  const increments: [string, number][] = [
    [REQUEST_FIGURE_FIELDS.count, tally.count],
    [REQUEST_FIGURE_FIELDS.errors, tally.errors],
    [REQUEST_FIGURE_FIELDS.latencySumUs, tally.latencySumUs],
    ...tally.buckets.map((n, index): [string, number] => [REQUEST_FIGURE_FIELDS.bucket(index), n]),
  ];
  return increments.filter(([, increment]) => increment !== 0);
}

/** Adds a second's hash (as HGETALL returns it) into `into`; unknown fields and non-numbers count as nothing. */
export function addHash(into: RequestTally, hash: Record<string, string>): void {
  const read = (field: string) => {
    const value = Number(hash[field]);
    return Number.isSafeInteger(value) && value > 0 ? value : 0;
  };
  into.count += read(REQUEST_FIGURE_FIELDS.count);
  into.errors += read(REQUEST_FIGURE_FIELDS.errors);
  into.latencySumUs += read(REQUEST_FIGURE_FIELDS.latencySumUs);
  for (let index = 0; index < BUCKETS; index += 1) into.buckets[index]! += read(REQUEST_FIGURE_FIELDS.bucket(index));
}

/** What the API reports of a window's tally. */
export interface RequestFigures {
  requestCount: number;
  errorCount: number;
  avgLatencyMs: number;
  p95LatencyMs: number;
}

export function figuresOf(tally: RequestTally): RequestFigures {
  return {
    requestCount: tally.count,
    errorCount: tally.errors,
    avgLatencyMs: tally.count === 0 ? 0 : tally.latencySumUs / tally.count / 1000,
    p95LatencyMs: latencyQuantileMs(0.95, tally.buckets),
  };
}

/**
 * The q-quantile of bucketed latencies, as Prometheus's histogram_quantile computes it
 * (prometheus/prometheus promql/quantile.go, `BucketQuantile`): find the bucket whose
 * cumulative count first reaches rank = q × observations, interpolate linearly inside it
 * (from 0 in the lowest bucket), and answer the highest finite bound when the rank falls
 * in the overflow bucket. Prometheus answers NaN for no observations; JSON has no NaN, so 0.
 */
export function latencyQuantileMs(q: number, buckets: readonly number[]): number {
  const observations = buckets.reduce((sum, n) => sum + n, 0);
  if (observations === 0) return 0;
  let rank = q * observations;
  let below = 0;
  for (let index = 0; index < LATENCY_BOUNDS_MS.length; index += 1) {
    const cumulative = below + buckets[index]!;
    if (cumulative >= rank) {
      const start = index === 0 ? 0 : LATENCY_BOUNDS_MS[index - 1]!;
      const end = LATENCY_BOUNDS_MS[index]!;
      rank -= below;
      return start + (end - start) * (rank / buckets[index]!);
    }
    below = cumulative;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}
