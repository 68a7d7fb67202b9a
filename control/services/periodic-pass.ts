import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { ExclusivePass } from './exclusive-pass.js';

export type PassOutcome = 'ran' | 'skipped' | 'failed';

/** One pass of one loop, as its observer sees it (metrics count and time these). */
export interface PassRecord {
  loop: string;
  /** `skipped`: another copy of the control API held the loop's lock. */
  outcome: PassOutcome;
  durationMs: number;
}

export type PassObserver = (pass: PassRecord) => void;

/** What every loop may be given by composition, beside its own collaborators. */
export interface LoopOptions {
  /** With more than one copy of the control API, only the copy holding the lock runs a pass. */
  exclusive?: ExclusivePass;
  onPass?: PassObserver;
}

export interface PeriodicPassOptions extends LoopOptions {
  /** The loop's name in logs and pass records. */
  loop: string;
  intervalMs: number;
  /** One pass's work; a rejection is logged with `failureMessage` and the next tick runs as usual. */
  pass: () => Promise<void>;
  failureMessage: string;
  logger: Logger;
}

const everyCopy: ExclusivePass = async (pass) => (await pass(), true);

/**
 * Runs a background loop's pass every `intervalMs`: one pass at a time (a tick that comes
 * during a slow pass joins it instead of stacking another), in one copy of the control API
 * at a time when given a lock, with failures logged and never thrown at the timer. The
 * timer does not keep the process alive; `stop` clears it and waits for the running pass.
 */
export class PeriodicPass {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly options: PeriodicPassOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runOnce(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Runs a pass now, or returns the one running; resolves once it is over, whatever its outcome. */
  runOnce(): Promise<void> {
    this.running ??= this.timed().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** No pass starts on a tick any more; a direct `runOnce` still runs one (a last pass on shutdown). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async timed(): Promise<void> {
    const { loop, pass, exclusive = everyCopy, logger, failureMessage } = this.options;
    const started = performance.now();
    let outcome: PassOutcome;
    try {
      outcome = (await exclusive(pass)) ? 'ran' : 'skipped';
    } catch (error) {
      logger.error({ err: error, loop }, failureMessage);
      outcome = 'failed';
    }
    this.record({ loop, outcome, durationMs: performance.now() - started });
  }

  /** An observer's fault is logged, not passed on: it must not stop the loop it watches. */
  private record(pass: PassRecord): void {
    try {
      this.options.onPass?.(pass);
    } catch (error) {
      this.options.logger.warn({ err: error, loop: pass.loop }, 'pass observer failed');
    }
  }
}

/**
 * A background service whose work is one PeriodicPass: start, runOnce and stop hand over
 * to it. A subclass builds `loop` in its constructor and overrides what it does
 * differently (a first pass before the timer, a last one after it).
 */
export abstract class PeriodicService {
  protected abstract readonly loop: PeriodicPass;

  start(): void | Promise<void> {
    this.loop.start();
  }

  /** One pass at a time (and in one copy of the control API at a time, when the loop has a lock). */
  runOnce(): Promise<void> {
    return this.loop.runOnce();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
