/**
 * Runs a driver's changes one after another, so a poll and an API call never act on the
 * same job at once. A failed step goes to its caller and to `onFailure`, and never stops
 * the steps queued after it.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly onFailure: (error: unknown) => void) {}

  /** Runs `work` after everything queued before it. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work);
    this.tail = run.catch((error) => {
      // After close, failures are the shutdown's (connections closing), not news.
      if (!this.closed) this.onFailure(error);
    });
    return run;
  }

  /** Waits for the steps already queued; their failures are no longer reported. */
  async close(): Promise<void> {
    this.closed = true;
    await this.tail.catch(() => undefined);
  }
}
