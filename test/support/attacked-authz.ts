import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AuthorizationTestClient, DecodedCheckResponse } from './edge-authz.js';
import type { FromChild, ToChild, UnderAttackOptions } from './authz-under-attack.js';

/**
 * The parent's side of test/support/authz-under-attack.ts: authz in a child process whose
 * memory is asked for over IPC, a stream of real Checks on a connection of their own, and a
 * siege that measures both around an attack.
 */

export interface MemoryFigures {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

export interface AttackedAuthz {
  port: number;
  /** After a full GC, unless `gc` is false (a sample while the attack runs). */
  memory(gc?: boolean): Promise<MemoryFigures>;
  /** Uncaught exceptions the child reported before it died of them. */
  readonly uncaught: readonly string[];
  /** How the child exited, if it has. */
  readonly exit: { code: number | null; signal: string | null } | undefined;
  /** The child's stderr, for failure messages. */
  stderr(): string;
  stop(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('./authz-under-attack.ts', import.meta.url));

export async function startAttackedAuthz(options: UnderAttackOptions): Promise<AttackedAuthz> {
  const child: ChildProcess = fork(SCRIPT, [JSON.stringify(options)], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8_000)));
  const uncaught: string[] = [];
  let exit: { code: number | null; signal: string | null } | undefined;
  const waiting = new Map<number, (figures: MemoryFigures) => void>();
  let nextId = 0;
  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (message: FromChild) => {
      if (message.type === 'listening') resolve(message.port);
      else if (message.type === 'uncaught') uncaught.push(message.error);
      else if (message.type === 'memory') {
        const { rss, heapUsed, external, arrayBuffers } = message;
        waiting.get(message.id)?.({ rss, heapUsed, external, arrayBuffers });
        waiting.delete(message.id);
      }
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      reject(new Error(`authz under attack exited (${code ?? signal}) before listening: ${stderr}`));
      for (const [id] of waiting) waiting.delete(id);
    });
  });
  const send = (message: ToChild) => child.connected && child.send(message);
  return {
    port,
    memory(gc = true) {
      return new Promise((resolve, reject) => {
        if (!child.connected) return reject(new Error(`authz under attack is gone (${JSON.stringify(exit)}): ${uncaught.join('\n')}${stderr}`));
        const id = (nextId += 1);
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error('authz under attack did not answer a memory question within 30 s'));
        }, 30_000);
        waiting.set(id, (figures) => {
          clearTimeout(timer);
          resolve(figures);
        });
        send({ type: 'memory', id, gc });
      });
    },
    uncaught,
    get exit() {
      return exit;
    },
    stderr: () => stderr,
    async stop() {
      if (exit) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      send({ type: 'stop' });
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** A real Check every `everyMs` on the client's own connection, each answer judged as it comes. */
export class CheckTraffic {
  sent = 0;
  allowed = 0;
  readonly failures: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly client: AuthorizationTestClient,
    private readonly host: string,
  ) {}

  /** One Check, awaited: the warm-up before a measurement, and proof the path works at all. */
  async checkOnce(): Promise<void> {
    const response = await this.client.check({ host: this.host });
    if (!isAllowed(response)) throw new Error(`a Check was not allowed: ${JSON.stringify(response)}`);
  }

  start(everyMs = 20): void {
    this.timer = setInterval(() => this.one(), everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.pending);
  }

  describe(): string {
    return `${this.allowed}/${this.sent} Checks allowed${this.failures.length > 0 ? `; failures: ${[...new Set(this.failures)].slice(0, 3).join(' | ')}` : ''}`;
  }

  private one(): void {
    this.sent += 1;
    const call: Promise<void> = this.client.check({ host: this.host }).then(
      (response) => {
        if (isAllowed(response)) this.allowed += 1;
        else this.failures.push(`not allowed: ${JSON.stringify(response).slice(0, 200)}`);
      },
      (error: Error) => {
        this.failures.push(error.message);
      },
    );
    this.pending.add(call);
    void call.finally(() => this.pending.delete(call));
  }
}

const isAllowed = (response: DecodedCheckResponse) => response.status.code === 0 && response.http_response === 'ok_response';

export interface SiegeReport {
  before: MemoryFigures;
  /** Undefined when authz did not answer (its event loop held by the attack): `unresponsive` says so. */
  after: MemoryFigures | undefined;
  unresponsive: string | undefined;
  /** The largest RSS sampled (without GC) while the attack ran. */
  peakRss: number;
  checks: CheckTraffic;
  uncaught: readonly string[];
}

/** What an attack may ask of the siege: to take the "after" figures now (e.g. while it still does not read). */
export interface Siege {
  port: number;
  measureNow(): Promise<void>;
}

export const MIB = 2 ** 20;

/**
 * Measures authz (after GC), runs Checks every 20 ms on their own connection and samples
 * RSS while `attack` runs, then measures again: after `attack` returns, unless it asked
 * earlier. The Checks run for at least `minTrafficMs`, however soon the attack is refused.
 */
export async function besiege(target: AttackedAuthz, traffic: CheckTraffic, attack: (siege: Siege) => Promise<void>, minTrafficMs = 1_500): Promise<SiegeReport> {
  for (let i = 0; i < 5; i += 1) await traffic.checkOnce();
  const before = await target.memory();
  let after: MemoryFigures | undefined;
  let unresponsive: string | undefined;
  const measure = async () => {
    try {
      after = await target.memory();
    } catch (error) {
      unresponsive = (error as Error).message;
    }
  };
  let peakRss = before.rss;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (!sampling) break;
      const sample = await target.memory(false).catch(() => undefined);
      if (sample) peakRss = Math.max(peakRss, sample.rss);
    }
  })();
  const started = Date.now();
  traffic.start();
  try {
    await attack({
      port: target.port,
      measureNow: measure,
    });
    if (!after && !unresponsive) await measure();
    const rest = minTrafficMs - (Date.now() - started);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  } finally {
    sampling = false;
    await traffic.stop();
    await sampler;
  }
  return { before, after, unresponsive, peakRss: Math.max(peakRss, after?.rss ?? 0), checks: traffic, uncaught: target.uncaught };
}

export function describeMemory({ before, after, peakRss, unresponsive }: SiegeReport): string {
  if (!after) return `no figures after the attack (${unresponsive}); RSS peak sampled ${((peakRss - before.rss) / MIB).toFixed(1)} MiB above the start`;
  const mib = (bytes: number) => `${bytes >= 0 ? '+' : ''}${(bytes / MIB).toFixed(1)} MiB`;
  return `RSS ${mib(after.rss - before.rss)} (peak ${mib(peakRss - before.rss)}), heap ${mib(after.heapUsed - before.heapUsed)}, external ${mib(after.external - before.external)}`;
}
