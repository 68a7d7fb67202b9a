/**
 * How often authz logs one Redis failure at most: a Redis that is down fails every Check
 * and every flush, and one line per interval says so without flooding the log.
 */
export const REDIS_ERROR_LOG_INTERVAL_MS = 5_000;

/** `action` at most once per `intervalMs`; the calls in between are dropped. */
export function throttled<T>(intervalMs: number, action: (value: T) => void): (value: T) => void {
  let last = -Infinity;
  return (value) => {
    const now = Date.now();
    if (now - last < intervalMs) return;
    last = now;
    action(value);
  };
}
