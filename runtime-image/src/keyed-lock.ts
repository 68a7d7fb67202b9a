/**
 * Runs tasks one at a time per key, in arrival order. Invokes on one session
 * go through it so that each sees the history the previous one left.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => done);
    this.tails.set(key, tail);
    await previous;
    try {
      return await task();
    } finally {
      release();
      // The last task of a key removes it, so idle keys hold no memory.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  get activeKeys(): number {
    return this.tails.size;
  }
}
