/**
 * A canary deployment's settings and the judgement of its figures (issue 36): the new
 * version takes `percent` of the agent's allowed requests on `replicas` of its own, beside
 * the stable version, until it is promoted (by hand, or after `autoPromoteAfterSeconds`)
 * or aborted (by hand, or because its 5xx ratio says so). Pure: the canary judge service
 * feeds it the edge's figures for both versions over the same window.
 */

export interface CanaryStrategy {
  /** 1 to 99: the share of the agent's allowed requests the new version gets. */
  percent: number;
  /** The new version's replicas while the canary runs. */
  replicas: number;
  /** 'caller': a caller stays on one version for the canary's life (its key, or its address on a public agent). */
  affinity: 'none' | 'caller';
  /** Promoted this long after the canary began to serve unless aborted first; null: by hand only. */
  autoPromoteAfterSeconds: number | null;
  /** Aborted past this 5xx ratio (once it has minRequests). */
  maxErrorRatio: number;
  /** Requests the canary must have answered in the window before its ratio is judged. */
  minRequests: number;
}

/** The settings as stored and shown (deployments.strategy, the API's `strategy`), defaults filled in. */
export interface StoredCanaryStrategy {
  type: 'canary';
  percent: number;
  replicas: number;
  affinity: 'none' | 'caller';
  auto_promote_after_seconds: number | null;
  max_error_ratio: number;
  min_requests: number;
}

/** The canary running now (agents.canary): cleared by the promote or abort that ends it. */
export interface RunningCanary {
  deployment_id: string;
  /** Its deployment's number: the preview hostname's `--d<number>`. */
  number: number;
  /** The deployment that keeps serving beside it, and that an abort returns to. */
  stable_deployment_id: string;
  strategy: StoredCanaryStrategy;
}

/**
 * When the canary began to serve: its `canary` event, which DeploymentTracker records once
 * its replicas are routable; null while they are still starting. The auto-promote time and
 * the API's `canary.started_at` count from here and not from the deploy: on a cluster a
 * canary can take minutes to pull and start, and one promoted the moment it serves would
 * never have been watched.
 */
export const servingSince = (events: readonly { phase: string; at: Date }[]): Date | null =>
  events.find((event) => event.phase === 'canary')?.at ?? null;

export const strategyOf = (stored: StoredCanaryStrategy): CanaryStrategy => ({
  percent: stored.percent,
  replicas: stored.replicas,
  affinity: stored.affinity,
  autoPromoteAfterSeconds: stored.auto_promote_after_seconds,
  maxErrorRatio: stored.max_error_ratio,
  minRequests: stored.min_requests,
});

/** A canary strategy as asked for: `percent` required, the rest defaulted. */
export interface CanaryStrategyInput {
  type: 'canary';
  percent: number;
  replicas?: number;
  affinity?: 'none' | 'caller';
  auto_promote_after_seconds?: number | null;
  max_error_ratio?: number;
  min_requests?: number;
}

export const resolveCanaryStrategy = (input: CanaryStrategyInput): StoredCanaryStrategy => ({
  type: 'canary',
  percent: input.percent,
  replicas: input.replicas ?? CANARY_DEFAULTS.replicas,
  affinity: input.affinity ?? CANARY_DEFAULTS.affinity,
  auto_promote_after_seconds: input.auto_promote_after_seconds ?? CANARY_DEFAULTS.autoPromoteAfterSeconds,
  max_error_ratio: input.max_error_ratio ?? CANARY_DEFAULTS.maxErrorRatio,
  min_requests: input.min_requests ?? CANARY_DEFAULTS.minRequests,
});

export const CANARY_DEFAULTS = Object.freeze({ replicas: 1, affinity: 'none', autoPromoteAfterSeconds: null, maxErrorRatio: 0.05, minRequests: 50 } as const);
export const CANARY_BOUNDS = Object.freeze({
  percent: { min: 1, max: 99 },
  autoPromoteAfterSeconds: { min: 60, max: 86_400 },
  maxErrorRatio: { min: 0, max: 1 },
  minRequests: { min: 1, max: 1_000_000 },
} as const);

/**
 * A canary's ratio may exceed the stable version's by this factor and margin before it is
 * its own fault: a stable version at 2% 5xx (a flaky model provider, say) does not make
 * every canary fail, while one that doubles it does.
 */
const STABLE_FACTOR = 2;
const STABLE_MARGIN = 0.01;

/** One version's requests in the judged window, as the edge counted them. */
export interface VersionFigures {
  requests: number;
  /** Answers with a 5xx status. */
  errors: number;
}

export type CanaryVerdict =
  | { action: 'wait'; why: string }
  | { action: 'abort'; reason: string }
  | { action: 'promote'; reason: string };

export interface CanaryJudgement {
  strategy: CanaryStrategy;
  canary: VersionFigures;
  stable: VersionFigures;
  /** When the canary started taking traffic. */
  startedAt: Date;
  now: Date;
}

/**
 * Abort when, with at least minRequests, the canary's 5xx ratio exceeds maxErrorRatio or
 * exceeds twice the stable version's plus 0.01; promote once autoPromoteAfterSeconds have
 * passed without that; else wait. A canary judged on too few requests is never aborted: a
 * single 500 in the first three requests is not a failing version. It is still promoted
 * when its time is up, since an agent with little traffic would otherwise never promote;
 * the reason says how many requests it had.
 */
export function judgeCanary({ strategy, canary, stable, startedAt, now }: CanaryJudgement): CanaryVerdict {
  const canaryRatio = ratioOf(canary);
  const stableRatio = ratioOf(stable);
  const figures = `canary ${describe(canary)}, stable ${describe(stable)}`;
  if (canary.requests >= strategy.minRequests) {
    const stableBound = STABLE_FACTOR * stableRatio + STABLE_MARGIN;
    if (canaryRatio > strategy.maxErrorRatio) {
      return { action: 'abort', reason: `5xx ratio ${format(canaryRatio)} above max_error_ratio ${strategy.maxErrorRatio}: ${figures}` };
    }
    if (canaryRatio > stableBound) {
      return { action: 'abort', reason: `5xx ratio ${format(canaryRatio)} above twice the stable version's plus 0.01 (${format(stableBound)}): ${figures}` };
    }
  }
  const elapsedSeconds = (now.getTime() - startedAt.getTime()) / 1000;
  if (strategy.autoPromoteAfterSeconds !== null && elapsedSeconds >= strategy.autoPromoteAfterSeconds) {
    return { action: 'promote', reason: `no failure in ${strategy.autoPromoteAfterSeconds} s: ${figures}` };
  }
  const why = canary.requests < strategy.minRequests ? `${canary.requests} of min_requests ${strategy.minRequests} so far` : `healthy so far: ${figures}`;
  return { action: 'wait', why };
}

const ratioOf = ({ requests, errors }: VersionFigures) => (requests === 0 ? 0 : errors / requests);
const format = (ratio: number) => ratio.toFixed(3);
const describe = (figures: VersionFigures) => `${figures.errors} 5xx of ${figures.requests} (${format(ratioOf(figures))})`;
