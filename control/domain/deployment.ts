import type { StoredCanaryStrategy } from './canary.js';
import type { StoredDeploy } from './deploy.js';

/** A deployment's lifecycle: one `in_progress`, then exactly one of the terminal four. */
export const DEPLOYMENT_STATUSES = ['in_progress', 'succeeded', 'failed', 'superseded', 'cancelled'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** The phases of a rollout as its progress stream reports them, in the order they happen. */
export const ROLLOUT_PHASES = ['queued', 'pulling', 'starting', 'health_check', 'routing', 'canary', 'promoted', 'draining', 'succeeded', 'failed', 'aborted'] as const;
export type RolloutPhase = (typeof ROLLOUT_PHASES)[number];

/** Phases after which a rollout reports nothing more. */
export const TERMINAL_PHASES: ReadonlySet<RolloutPhase> = new Set(['succeeded', 'failed', 'aborted']);

/** One rollout as stored: the configuration it rolled out (secrets sealed) and how it went. */
export interface DeploymentRow {
  id: string;
  agent_id: string;
  account_id: string;
  number: number;
  agent_version: number;
  status: DeploymentStatus;
  deploy: StoredDeploy;
  /** The canary settings it was deployed with (issue 36); null: a rolling deployment. */
  strategy: StoredCanaryStrategy | null;
  model: string;
  provider: string;
  api_key_sealed: string | null;
  system_prompt: string | null;
  rollback_of: string | null;
  created_by: string | null;
  orchestrator_version: number | null;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

/** One step of a rollout; `id` orders a deployment's events and resumes its stream. */
export interface DeploymentEventRow {
  id: number;
  deployment_id: string;
  phase: RolloutPhase;
  replica_id: string | null;
  message: string;
  at: Date;
}
