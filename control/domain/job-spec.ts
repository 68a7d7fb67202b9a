import type { SecretBox } from '../crypto/secret-box.js';
import type { AgentRow } from './agent.js';
import { traceContent } from './deploy.js';
import type { JobSpec, Parking } from './job.js';
import { PROVIDER_KEY_VARIABLE, type Provider } from './models.js';
import { openRegistryAuth } from './registry-auth.js';

/**
 * The job the orchestrator runs for an agent: exactly docs/contract.md's environment (the
 * platform's variables, the model key under its provider's variable unless deploy.env
 * sets that variable, then deploy.env) and nothing else. Secrets are decrypted here,
 * only to be handed to the orchestrator, which keeps them out of job listings.
 */
export interface JobSettings {
  runtimeImage: string;
  /** The agent's public URL, shown to operators in the orchestrator (Nomad job Meta). */
  urlOf: (slug: string) => string;
}

export function jobSpecFor(agent: AgentRow, box: SecretBox, settings: JobSettings): JobSpec {
  const env: Record<string, string> = {
    AGENT_ID: agent.id,
    AGENT_NAME: agent.name,
    SYSTEM_PROMPT: agent.system_prompt ?? '',
    LLM_MODEL: agent.model,
    LLM_PROVIDER: agent.provider,
  };
  const secretEnv: Record<string, string> = {};
  const keyVariable = PROVIDER_KEY_VARIABLE[agent.provider as Provider];
  const envSetsKey = agent.deploy.env.some((entry) => entry.key === keyVariable);
  if (agent.api_key_sealed && !envSetsKey) secretEnv[keyVariable] = box.open(agent.api_key_sealed);
  for (const entry of agent.deploy.env) {
    if (entry.secret) secretEnv[entry.key] = box.open(entry.sealed);
    else env[entry.key] = entry.value;
  }
  const deploy = agent.deploy;
  // Only when on: the runtime's default is off, and an unchanged environment keeps running replicas as they are.
  if (traceContent(deploy)) env.TRACE_CONTENT = 'true';
  return {
    agentId: agent.id,
    slug: agent.slug,
    name: agent.name,
    accountId: agent.account_id,
    url: settings.urlOf(agent.slug),
    version: agent.deployed_version ?? agent.version,
    image: deploy.image ?? settings.runtimeImage,
    port: deploy.port,
    count: agent.desired_replicas,
    cpu: deploy.resources.cpu,
    memoryMb: deploy.resources.memory_mb,
    env,
    secretEnv,
    ...(deploy.registry_auth ? { registryAuth: openRegistryAuth(deploy.registry_auth, box) } : {}),
    ...(deploy.image === null ? { platformImage: true } : {}),
    check: deploy.image === null ? 'http' : 'tcp',
    // Never below 1 for the Nomad Autoscaler: it sees CPU, not the edge, and would park an
    // agent no request can wake. The platform parks (IdleParker) by a count of 0, and the
    // driver's scaling block then widens Min to 0, which Nomad accepts (nomad/structs/structs.go,
    // `ScalingPolicy.Validate`: Min non-negative; `TaskGroup.validateScalingPolicy`: Min <= Count).
    scaling: { enabled: deploy.auto_scale, min: Math.max(deploy.min_replicas, 1), max: deploy.max_replicas },
    ...(parkingOf(agent) ? { parked: parkingOf(agent) } : {}),
  };
}

/** How the parked agent's replica is kept, while the platform keeps it parked; undefined otherwise. */
export const parkingOf = (agent: Pick<AgentRow, 'parked_at' | 'desired_replicas' | 'warm_parked_until'>): Parking | undefined =>
  agent.parked_at !== null && agent.desired_replicas === 0 ? { warmUntil: agent.warm_parked_until } : undefined;
