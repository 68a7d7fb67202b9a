import type { Logger } from 'pino';

/** Resolves when the dependency answers; rejects (or never settles) when it cannot. */
export type DependencyProbe = () => Promise<unknown>;

export type DependencyState = 'ok' | 'unavailable';

export interface Readiness {
  readonly ready: boolean;
  /** Every dependency by name, e.g. `{ postgres: 'ok', redis: 'unavailable' }`. */
  readonly dependencies: Readonly<Record<string, DependencyState>>;
}

/**
 * Below the 2 s timeout of the Consul checks in nomad-jobs/, so a hung dependency is
 * reported by name instead of the check timing out without saying which one it was.
 */
export const READINESS_TIMEOUT_MS = 1_000;

/**
 * Asks every dependency at once, each under `timeoutMs`. The cause of a failure goes to
 * the log only: the readiness endpoint is unauthenticated and errors name hosts and ports.
 */
export function readinessCheck(probes: Record<string, DependencyProbe>, timeoutMs: number, logger: Logger): () => Promise<Readiness> {
  return async () => {
    const names = Object.keys(probes);
    const results = await Promise.allSettled(names.map((name) => withinDeadline(probes[name]!(), timeoutMs, name)));
    const dependencies: Record<string, DependencyState> = {};
    results.forEach((result, i) => {
      const name = names[i]!;
      dependencies[name] = result.status === 'fulfilled' ? 'ok' : 'unavailable';
      if (result.status === 'rejected') logger.warn({ err: result.reason, dependency: name }, 'not ready: a dependency does not answer');
    });
    return { ready: Object.values(dependencies).every((state) => state === 'ok'), dependencies };
  };
}

/** The probe's own work is not cancelled (a late reply is dropped); the caller is answered in time. */
async function withinDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
