import { sha256Hex } from '../crypto/tokens.js';
import type { DeploymentRow } from '../domain/deployment.js';
import type { CanaryState, Deployment } from '../schemas/deployments.js';
import type { Static } from '@sinclair/typebox';
import { deployView, type PresenterSettings } from './agent-presenter.js';

/**
 * A deployment as the API shows it: its deploy object as an agent's is shown (secret
 * values masked), the system prompt only as its hash (a prompt may hold what its owner
 * keeps private; the hash still tells two deployments' prompts apart), the model key never.
 * A running canary also shows its start, preview URL and both versions' figures.
 */
export function deploymentView(row: DeploymentRow, settings: PresenterSettings, canary: Static<typeof CanaryState> | null = null): Deployment {
  const deploy = deployView(row.deploy, settings);
  return {
    id: row.id,
    agent_id: row.agent_id,
    number: row.number,
    agent_version: row.agent_version,
    status: row.status,
    image: deploy.image,
    deploy,
    model: row.model,
    system_prompt_sha256: row.system_prompt === null ? null : sha256Hex(row.system_prompt),
    rollback_of: row.rollback_of,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
    error: row.error,
    nomad_job_version: row.orchestrator_version,
    strategy: row.strategy,
    // `canary`: given only for the agent's running canary (DeploymentHistoryService reads its figures).
    phase: canary ? 'canary' : null,
    canary,
  };
}
