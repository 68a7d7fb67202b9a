/**
 * Wakes the streams that follow a key (a deployment) when something new was written for it,
 * inside this process. Other copies of the control API are not told: their streams also
 * poll, so a wait always ends after `ms` at the latest.
 */
export class EventNotifier {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Resolves at the next `notify(key)`, after `ms`, or when `signal` aborts, whichever comes first. */
  next(key: string, ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.waiting.get(key) ?? new Set<() => void>();
      this.waiting.set(key, waiters);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiting.get(key) === waiters) this.waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
  }

  notify(key: string): void {
    for (const wake of [...(this.waiting.get(key) ?? [])]) wake();
  }
}
