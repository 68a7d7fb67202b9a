/**
 * Redis key names of the edge projection, shared with the control API
 * (control/edge/projection.ts writes the first three). Every key carries the slug as a
 * hash tag, so one Check's keys live in one Redis Cluster slot and one Lua script can
 * touch them all.
 */
export const edgeKeyNames = {
  agent: (slug: string) => `edge:agent:{${slug}}`,
  keys: (slug: string) => `edge:keys:{${slug}}`,
  upstreams: (slug: string) => `edge:upstreams:{${slug}}`,
  callerCounter: (slug: string, caller: string, window: number) => `edge:rl:{${slug}}:caller:${caller}:${window}`,
  agentCounter: (slug: string, window: number) => `edge:rl:{${slug}}:agent:${window}`,
  usage: (slug: string, month: string) => `edge:usage:{${slug}}:${month}`,
};

/** Fixed rate-limit windows are one minute long. */
export const WINDOW_SECONDS = 60;
/** Counters outlive their window by one more, then expire. */
export const COUNTER_TTL_SECONDS = 2 * WINDOW_SECONDS;

/** The window a moment falls in: whole minutes since the epoch. */
export const windowOf = (now: Date): number => Math.floor(now.getTime() / 1000 / WINDOW_SECONDS);

/** Whole seconds until the window of `now` ends, at least 1 (for Retry-After). */
export function secondsToWindowEnd(now: Date): number {
  const windowEndMs = (windowOf(now) + 1) * WINDOW_SECONDS * 1000;
  return Math.max(1, Math.ceil((windowEndMs - now.getTime()) / 1000));
}

/** The usage bucket of a moment: its UTC month, `YYYY-MM`. */
export const usageMonthOf = (now: Date): string => now.toISOString().slice(0, 7);
