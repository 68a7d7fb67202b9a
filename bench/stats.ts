import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LatencySummary {
  count: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  max_ms: number;
}

export function summarise(samplesMs: number[]): LatencySummary {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    count: sorted.length,
    p50_ms: round(at(0.5)),
    p99_ms: round(at(0.99)),
    mean_ms: round(sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)),
    max_ms: round(sorted[sorted.length - 1] ?? 0),
  };
}

/** Times `task` once, in milliseconds. */
export async function timed(task: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await task();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/**
 * Runs `count` tasks with at most `concurrency` in flight, returning each one's latency.
 * With `staggerMs`, the workers start evenly spread over that time rather than all at once
 * (worker k after k/concurrency of it), the wait not timed.
 */
export async function runConcurrently(count: number, concurrency: number, task: (i: number) => Promise<unknown>, { staggerMs = 0 } = {}): Promise<number[]> {
  const samples: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      if (staggerMs > 0) await sleep((worker / concurrency) * staggerMs);
      while (next < count) {
        const i = next++;
        samples.push(await timed(() => task(i)));
      }
    }),
  );
  return samples;
}

export function writeResult(name: string, result: unknown): string {
  const path = join(import.meta.dirname, 'results', `${name}.json`);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
  return path;
}

export interface Throughput extends LatencySummary {
  in_flight: number;
  per_second: number;
  /** Calls that did not succeed (for Check: denials, i.e. authz's Redis deadline was missed). */
  failed: number;
}

/**
 * `count` calls of `task` at `inFlight` at once, after a warm-up (connections, JIT).
 * `task` resolves true on success; a failure is counted, not thrown, so one slow moment
 * does not void the run.
 */
export async function measureThroughput(count: number, inFlight: number, task: (i: number) => Promise<boolean>): Promise<Throughput> {
  await runConcurrently(Math.min(500, count), inFlight, task);
  let failed = 0;
  const started = process.hrtime.bigint();
  const samples = await runConcurrently(count, inFlight, async (i) => {
    if (!(await task(i))) failed += 1;
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { in_flight: inFlight, per_second: Math.round(count / seconds), failed, ...summarise(samples) };
}

/** The run with the median `key` (the upper one of an even count). */
export function medianBy<T>(runs: readonly T[], key: (run: T) => number): T {
  return [...runs].sort((a, b) => key(a) - key(b))[Math.floor(runs.length / 2)]!;
}

/**
 * `measure` each subject in turn, `rounds` times, so a moment of noise on a shared machine
 * moves one round of one subject, not the comparison; per subject, the round with the
 * median `key` and every round's `key`.
 */
export async function medianRoundsInTurn<S, R>(
  subjects: Readonly<Record<string, S>>,
  rounds: number,
  measure: (subject: S) => Promise<R>,
  key: (run: R) => number,
): Promise<Record<string, { median: R; rounds: number[] }>> {
  const runs: Record<string, R[]> = Object.fromEntries(Object.keys(subjects).map((name) => [name, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (const [name, subject] of Object.entries(subjects)) runs[name]!.push(await measure(subject));
  }
  return Object.fromEntries(Object.entries(runs).map(([name, all]) => [name, { median: medianBy(all, key), rounds: all.map(key) }]));
}
