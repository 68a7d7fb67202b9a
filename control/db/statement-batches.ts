/** How a StatementBatches groups calls. */
export interface BatchLimits {
  /** Batches running at once; a call made while this many run waits for the next. */
  maxInFlight: number;
  /** Calls in one batch at most. */
  maxCalls: number;
  /** The most of `weight` one batch carries (the bytes it sends); a single heavier call still goes, alone. */
  maxWeight: number;
}

interface WaitingCall<Call, Result> {
  call: Call;
  weight: number;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/**
 * Calls of one statement, run together: a call made while fewer than `maxInFlight` batches
 * run goes as soon as the calls made with it are in (scheduleStart), with whatever calls wait; a call made while that many run waits, and
 * goes with the others that came meanwhile in the next batch. When calls come one at a
 * time each is a batch of one and waits for nothing; when fifty come at once, as fifty
 * conversations' turns do, they cost one round trip and one statement of Postgres's, where
 * each paid its own in a queue of fifty (Postgres's group commit, done before the statement).
 *
 * `run` answers a batch with one result per call, in the order of the calls. When it fails,
 * every call of the batch fails with its error.
 */
export class StatementBatches<Call, Result> {
  private readonly waiting: WaitingCall<Call, Result>[] = [];
  private inFlight = 0;
  private startScheduled = false;

  constructor(
    private readonly run: (calls: Call[]) => Promise<Result[]>,
    private readonly limits: BatchLimits,
    private readonly weightOf: (call: Call) => number = () => 0,
  ) {}

  submit(call: Call): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ call, weight: this.weightOf(call), resolve, reject });
      this.scheduleStart();
    });
  }

  /**
   * Starts batches once the promise jobs queued so far have run, as DataLoader schedules its
   * dispatch (graphql/dataloader, src/index.js, enqueuePostPromiseJob): the calls of one
   * request, made a few awaits deep each (a batch of a replica's calls, POST /v1/batch), then
   * go as one statement, where starting at once would send the first two alone. No I/O or
   * timer is waited for, so a lone call goes as soon as it did.
   */
  private scheduleStart(): void {
    if (this.startScheduled) return;
    this.startScheduled = true;
    void Promise.resolve().then(() =>
      process.nextTick(() => {
        this.startScheduled = false;
        this.startBatches();
      }),
    );
  }

  private startBatches(): void {
    while (this.inFlight < this.limits.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.callsThatFit());
      this.inFlight += 1;
      this.runBatch(batch).finally(() => {
        this.inFlight -= 1;
        this.startBatches();
      });
    }
  }

  /** How many of the waiting calls the next batch takes: at least one, however heavy. */
  private callsThatFit(): number {
    let weight = 0;
    let count = 0;
    for (const waiting of this.waiting) {
      if (count === this.limits.maxCalls || (count > 0 && weight + waiting.weight > this.limits.maxWeight)) break;
      weight += waiting.weight;
      count += 1;
    }
    return count;
  }

  private async runBatch(batch: WaitingCall<Call, Result>[]): Promise<void> {
    try {
      const results = await this.run(batch.map((waiting) => waiting.call));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} calls was answered with ${results.length} results`);
      batch.forEach((waiting, index) => waiting.resolve(results[index]!));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}
