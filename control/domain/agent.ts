import type { RunningCanary } from './canary.js';
import type { StoredDeploy } from './deploy.js';

/** The states of an agent's lifecycle; the API's enums are built from this list. */
export const AGENT_STATUSES = ['pending', 'starting', 'running', 'scaling', 'stopped', 'failed', 'crashed'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** Who may call the agent at the edge: anyone, or holders of one of its access keys. */
export const ACCESS_MODES = ['public', 'private'] as const;
export type AccessMode = (typeof ACCESS_MODES)[number];

/** An agent as stored: what its owner asked for and what the orchestrator last reported. */
export interface AgentRow {
  id: string;
  account_id: string;
  name: string;
  slug: string;
  runtime: string;
  framework: string;
  model: string;
  provider: string;
  status: AgentStatus;
  access: AccessMode;
  rate_limit_rpm: number | null;
  replicas: number;
  desired_replicas: number;
  /** Set while the platform keeps the idle agent at 0 replicas until a request wakes it; null otherwise. */
  parked_at: Date | null;
  /** While parked warm (issue 40): until when its replica stays frozen in memory, then cold; null otherwise. */
  warm_parked_until: Date | null;
  deployed_version: number | null;
  deploy: StoredDeploy;
  /** The canary running now beside the stable version (issue 36), null otherwise. */
  canary: RunningCanary | null;
  api_key_sealed: string | null;
  system_prompt: string | null;
  tags: string[];
  metadata: Record<string, string>;
  error: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}
