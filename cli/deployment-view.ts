import type { Agent } from '../control/schemas/agents.js';
import type { Deployment } from '../control/schemas/deployments.js';
import { slugOf } from './resolve-agent.js';
import { details, table, type Paint, type Terminal } from './terminal.js';

/** The API's own types (control/schemas/deployments.ts): a deployment's canary settings, its running canary, one version's figures. */
export type CanarySettings = NonNullable<Deployment['strategy']>;
export type ServingCanary = NonNullable<Deployment['canary']>;
export type VersionFigures = ServingCanary['figures']['stable'];

/**
 * A deployment as the API shows it. The canary fields may be absent: an API from before
 * canary deploys (issue 36) has none, and its deployments are rolling ones.
 */
export type DeploymentView = Omit<Deployment, 'strategy' | 'phase' | 'canary'> & Partial<Pick<Deployment, 'strategy' | 'phase' | 'canary'>>;

export const DEPLOYMENT_COLUMNS = ['#', 'id', 'status', 'phase', 'image', 'rollback', 'created', 'error'];

export const deploymentRow = (deployment: DeploymentView) => [
  deployment.number, deployment.id, deployment.status, phaseOf(deployment), deployment.image,
  deployment.rollback_of ? `rollback of ${deployment.rollback_of}` : '', deployment.created_at, deployment.error,
];

/** `canary 10%` while a canary serves; null (shown as -) otherwise. */
export function phaseOf(deployment: DeploymentView): string | null {
  if (deployment.phase !== 'canary') return deployment.phase ?? null;
  const percent = deployment.canary?.percent ?? deployment.strategy?.percent;
  return percent === undefined ? 'canary' : `canary ${percent}%`;
}

export function showDeployment(terminal: Terminal, deployment: DeploymentView): void {
  terminal.out(details([
    ['id', deployment.id], ['number', deployment.number], ['status', deployment.status], ['phase', phaseOf(deployment)],
    ['strategy', deployment.strategy ? describeStrategy(deployment.strategy) : 'rolling'],
    ['image', deployment.image], ['model', deployment.model], ['agent version', deployment.agent_version],
    ['rollback of', deployment.rollback_of], ['created', deployment.created_at], ['finished', deployment.finished_at],
    ...(deployment.canary ? [['preview', deployment.canary.preview_url], ['canary since', deployment.canary.started_at]] as [string, string][] : []),
    ['error', deployment.error],
  ], terminal.paint));
  const figures = deployment.canary?.figures;
  if (figures) terminal.out(`\n${figuresTable(figures, terminal.paint)}`);
}

/** The figures of every deployment of `deployments` whose canary serves (one at most), after a list. */
export function showServingCanaries(terminal: Terminal, deployments: DeploymentView[]): void {
  for (const deployment of deployments) {
    const figures = deployment.canary?.figures;
    if (!figures) continue;
    terminal.out(`\nDeployment ${deployment.number} (${phaseOf(deployment)}) since ${deployment.canary!.started_at}, preview ${deployment.canary!.preview_url}:`);
    terminal.out(figuresTable(figures, terminal.paint));
  }
}

/** Both versions' requests, errors and latencies, one row each. */
export function figuresTable(figures: { stable: VersionFigures; canary: VersionFigures }, paint: Paint): string {
  const row = (version: string, of: VersionFigures) => [version, of.request_count, of.error_count, errorRatio(of), of.avg_latency_ms, of.p95_latency_ms];
  return table(['version', 'requests', 'errors', 'error ratio', 'avg ms', 'p95 ms'], [row('stable', figures.stable), row('canary', figures.canary)], paint);
}

const errorRatio = (of: VersionFigures) => (of.request_count === 0 ? null : `${((100 * of.error_count) / of.request_count).toFixed(1)}%`);

/** `canary 10%, 1 replica, affinity none, promoted by hand, aborted above 0.05 errors once 50 requests answered`. */
export function describeStrategy(strategy: CanarySettings): string {
  const replicas = `${strategy.replicas} replica${strategy.replicas === 1 ? '' : 's'}`;
  const promoted = strategy.auto_promote_after_seconds === null ? 'promoted by hand' : `promoted after ${formatDuration(strategy.auto_promote_after_seconds)}`;
  const aborted = `aborted above ${strategy.max_error_ratio} errors once ${strategy.min_requests} requests answered`;
  return `canary ${strategy.percent}%, ${replicas}, affinity ${strategy.affinity}, ${promoted}, ${aborted}`;
}

/** 90 → `90s`, 600 → `10m`, 5400 → `1h30m`: as --auto-promote takes it. */
export function formatDuration(seconds: number): string {
  const parts: [number, string][] = [[Math.floor(seconds / 3600), 'h'], [Math.floor((seconds % 3600) / 60), 'm'], [seconds % 60, 's']];
  return parts.filter(([amount]) => amount > 0).map(([amount, unit]) => `${amount}${unit}`).join('') || '0s';
}

/**
 * What `agents deploy --canary` prints once the canary serves (or, with --detach, once it
 * was accepted): which deployment it is, its preview URL, and the commands that end it.
 */
export function canarySummary(agent: Agent, deployment: DeploymentView, paint: Paint): string {
  const reference = slugOf(agent);
  const percent = deployment.canary?.percent ?? deployment.strategy?.percent;
  const serving = deployment.phase === 'canary' ? `serves ${percent}% of requests` : `starting, to serve ${percent}% of requests`;
  const preview = deployment.canary?.preview_url ?? `not yet: agentctl deployments get ${reference} ${deployment.number} shows it once the canary serves`;
  return details([
    ['canary', `deployment ${deployment.number} ${serving} beside the stable version`],
    ['preview', preview],
    ['promote', `agentctl deployments promote ${reference} ${deployment.number}`],
    ['abort', `agentctl deployments abort ${reference} ${deployment.number}`],
  ], paint);
}
