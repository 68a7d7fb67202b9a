/**
 * Runs work one step after another per key (an agent), and different keys side by side, so
 * an older observation never lands after a newer one. A failed step goes to `onFailure` and
 * never stops the steps queued after it.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly onFailure: (key: string, error: unknown) => void) {}

  /** Runs `work` after the steps of `key` queued before it; resolves when it is done (or failed). */
  run(key: string, work: () => Promise<void>): Promise<void> {
    const next = (this.tails.get(key) ?? Promise.resolve()).then(work).catch((error: unknown) => this.onFailure(key, error));
    this.tails.set(key, next);
    void next.finally(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves once every step queued so far, and any queued while waiting, is done. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.allSettled([...this.tails.values()]);
  }
}
