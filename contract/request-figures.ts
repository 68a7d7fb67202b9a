/**
 * Per-agent request figures: what the edge counts of every request it forwarded to an
 * agent, and how the control API sums them (docs/contract.md, "Request figures").
 *
 * The edge adds each second of requests to one Redis hash per agent
 * (`edgeKeyNames.requestFigures`) with HINCRBY, so any number of edge processes add up;
 * the control API sums the last FIGURES_WINDOW_SECONDS of them. Both sides take the
 * field names, the latency buckets and the sums from here.
 *
 * A canary's requests (authz's `version` metadata `canary`) count twice in the same hash:
 * in the plain fields, which stay every version's totals so readers that know nothing of
 * canaries stay right, and again under CANARY_FIELD_PREFIX. The stable version's figures
 * are the difference (stableTallyOf).
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

/**
 * Before each field of a canary's share of the second. Same hash, not a key of its own: it
 * keeps the agent's hash tag (slot), TTL and single pipelined write per flush.
 */
export const CANARY_FIELD_PREFIX = 'canary_';

/** The `version` authz gives a request routed to an agent's canary; any other value, or none, is the stable version. */
export const CANARY_VERSION = 'canary';

/**
 * Whether a request's version (the ext_authz metadata `version`) is the canary. Exactly
 * `canary` only: a request without one (from an authz before canaries) or with a value
 * this code does not know counts as stable, where it counted before.
 */
export const isCanaryVersion = (version: string | null | undefined): boolean => version === CANARY_VERSION;

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

/** The HINCRBY increments of a canary's share of the second: tallyIncrements' fields, prefixed. */
export function canaryIncrements(tally: RequestTally): [field: string, increment: number][] {
  return tallyIncrements(tally).map(([field, increment]) => [CANARY_FIELD_PREFIX + field, increment]);
}

/**
 * Adds a second's hash (as HGETALL returns it) into `into`: every version's totals (the
 * canary_ fields are not read). Unknown fields and non-numbers count as nothing.
 */
export function addHash(into: RequestTally, hash: Record<string, string>): void {
  addFields(into, hash, '');
}

/** Adds the fields named `prefix` + a REQUEST_FIGURE_FIELDS name. */
function addFields(into: RequestTally, hash: Record<string, string>, prefix: string): void {
  const read = (field: string) => {
    const value = Number(hash[prefix + field]);
    return Number.isSafeInteger(value) && value > 0 ? value : 0;
  };
  into.count += read(REQUEST_FIGURE_FIELDS.count);
  into.errors += read(REQUEST_FIGURE_FIELDS.errors);
  into.latencySumUs += read(REQUEST_FIGURE_FIELDS.latencySumUs);
  for (let index = 0; index < BUCKETS; index += 1) into.buckets[index]! += read(REQUEST_FIGURE_FIELDS.bucket(index));
}

/** A window's (or a second's) tallies as stored: every version's totals, and the canary's share of them. */
export interface VersionTallies {
  all: RequestTally;
  canary: RequestTally;
}

export const emptyVersionTallies = (): VersionTallies => ({ all: emptyTally(), canary: emptyTally() });

/** Adds a second's hash into both tallies: the plain fields into `all`, the canary_ ones into `canary`. */
export function addVersionedHash(into: VersionTallies, hash: Record<string, string>): void {
  addFields(into.all, hash, '');
  addFields(into.canary, hash, CANARY_FIELD_PREFIX);
}

/** One stored hash split into every version's totals and the canary's share. */
export function versionTalliesOf(hash: Record<string, string>): VersionTallies {
  const tallies = emptyVersionTallies();
  addVersionedHash(tallies, hash);
  return tallies;
}

/**
 * The stable version's tally: all − canary, field by field. Never below 0: the recorder
 * writes the totals before the canary's share, so a read between the two sees a canary
 * short, not ahead; the floor keeps a hand-edited or half-written hash from giving
 * negative counts all the same.
 */
export function stableTallyOf({ all, canary }: VersionTallies): RequestTally {
  const minus = (total: number, share: number) => Math.max(0, total - share);
  return {
    count: minus(all.count, canary.count),
    errors: minus(all.errors, canary.errors),
    latencySumUs: minus(all.latencySumUs, canary.latencySumUs),
    buckets: all.buckets.map((n, index) => minus(n, canary.buckets[index] ?? 0)),
  };
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

/** A window's figures per version, for comparing a canary with the version it would replace. */
export interface VersionFigures {
  stable: RequestFigures;
  canary: RequestFigures;
}

export function versionFiguresOf(tallies: VersionTallies): VersionFigures {
  return { stable: figuresOf(stableTallyOf(tallies)), canary: figuresOf(tallies.canary) };
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
