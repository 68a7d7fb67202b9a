import { spawn, type ChildProcess } from 'node:child_process';
import { backoffMs, NO_JITTER, type FailureKind } from '../../contract/backoff.js';

/**
 * Keeps the platform's processes running for `npm run up`: a component that exits on its
 * own is started again after a backoff, and logged; one that keeps crashing (or exits
 * with a configuration error, which a restart cannot fix) gives up the whole platform;
 * `stop()` ends every child, whether it is running, restarting or already dead.
 */
export interface Component {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** 'ignore' for a chatty server (redis-server's banner); errors still reach stderr. */
  stdout?: 'inherit' | 'ignore';
}

export interface SupervisorOptions {
  /** Delay before the first restart; doubled for each further crash within `crashWindowMs`. */
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** This many crashes of one component within `crashWindowMs` give up the platform. */
  maxCrashes: number;
  crashWindowMs: number;
  /** How long a child may take to exit after SIGTERM before it gets SIGKILL. */
  stopTimeoutMs: number;
  log: (line: string) => void;
  /** Called once when the supervisor gives up; the caller stops the platform. */
  onGiveUp: (reason: string) => void;
}

export const UP_SUPERVISION: Omit<SupervisorOptions, 'log' | 'onGiveUp'> = {
  backoffInitialMs: 500,
  backoffMaxMs: 10_000,
  maxCrashes: 5,
  crashWindowMs: 60_000,
  stopTimeoutMs: 15_000,
};

/** sysexits.h EX_CONFIG: control/main.ts exits with it when its configuration is wrong. */
const EX_CONFIG = 78;

/** A configuration error is permanent: a restart cannot fix it. Any other exit may pass. */
const exitKind = (code: number | null): FailureKind => (code === EX_CONFIG ? 'permanent' : 'transient');

interface Supervised {
  component: Component;
  child: ChildProcess;
  crashes: number[];
  restartTimer?: NodeJS.Timeout;
}

/**
 * A child has exited once either is set. A child killed by a signal has `exitCode` null
 * and `signalCode` set, and its `exit` event has already fired: waiting for it would hang.
 */
export const hasExited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

export class Supervisor {
  private readonly supervised: Supervised[] = [];
  private stopping = false;
  private gaveUp = false;

  constructor(private readonly options: SupervisorOptions) {}

  /** Starts `component` and keeps it running until `stop()`. */
  start(component: Component): void {
    if (this.stopping) return;
    const entry: Supervised = { component, child: this.spawn(component), crashes: [] };
    this.supervised.push(entry);
    this.watch(entry);
  }

  /** The running process of a component (a new one after each restart). */
  processOf(name: string): ChildProcess | undefined {
    return this.supervised.find((entry) => entry.component.name === name)?.child;
  }

  /** Stops every child, the last started first; resolves once each has exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const entry of this.supervised) clearTimeout(entry.restartTimer);
    for (const entry of [...this.supervised].reverse()) await this.terminate(entry.component.name, entry.child);
  }

  private spawn(component: Component): ChildProcess {
    const child = spawn(component.command, component.args, {
      cwd: component.cwd,
      env: component.env,
      stdio: ['ignore', component.stdout ?? 'inherit', 'inherit'],
      // A process group of its own: Ctrl-C in the terminal reaches the supervisor alone,
      // which stops the children in order (the edge first, Redis last), so that the
      // control API's last usage flush still finds Redis.
      detached: true,
    });
    // A command that cannot start (ENOENT) reports it here and then exits like a crash.
    child.on('error', (error) => this.options.log(`${component.name}: ${error.message}`));
    if (child.pid !== undefined) this.options.log(`started ${component.name} (pid ${child.pid})`);
    return child;
  }

  private watch(entry: Supervised): void {
    entry.child.once('exit', (code, signal) => this.exited(entry, code, signal));
  }

  private exited(entry: Supervised, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.stopping || this.gaveUp) return;
    const { name } = entry.component;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (exitKind(code) === 'permanent') return this.giveUp(`${name} exited with ${how}: its configuration is wrong, and a restart cannot fix that`);
    const now = Date.now();
    entry.crashes = [...entry.crashes.filter((at) => now - at < this.options.crashWindowMs), now];
    const recent = entry.crashes.length;
    if (recent >= this.options.maxCrashes) {
      return this.giveUp(`${name} exited ${recent} times within ${this.options.crashWindowMs / 1000} s (last: ${how})`);
    }
    // Not jittered: a handful of local processes, restarted on the schedule the log announces.
    const delay = backoffMs({ baseMs: this.options.backoffInitialMs, maxMs: this.options.backoffMaxMs }, recent, NO_JITTER);
    this.options.log(`${name} exited (${how}); restarting in ${delay} ms (crash ${recent} of ${this.options.maxCrashes} allowed within ${this.options.crashWindowMs / 1000} s)`);
    entry.restartTimer = setTimeout(() => {
      if (this.stopping || this.gaveUp) return;
      entry.child = this.spawn(entry.component);
      this.watch(entry);
    }, delay);
  }

  private giveUp(reason: string): void {
    if (this.gaveUp) return;
    this.gaveUp = true;
    this.options.log(`${reason}; stopping the platform`);
    this.options.onGiveUp(reason);
  }

  /** SIGTERM, then SIGKILL after `stopTimeoutMs`; resolves once the child has exited. */
  private async terminate(name: string, child: ChildProcess): Promise<void> {
    if (hasExited(child)) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.options.stopTimeoutMs);
    });
    if ((await Promise.race([exited, late])) === 'late') {
      this.options.log(`${name} did not stop within ${this.options.stopTimeoutMs / 1000} s of SIGTERM; sending SIGKILL`);
      child.kill('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
  }
}
