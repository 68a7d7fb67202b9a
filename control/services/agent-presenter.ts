import type { AgentUrlSettings } from '../config/config.js';
import type { AgentRow } from '../domain/agent.js';
import { scaleToZeroAfterSeconds, sessionTtlSeconds, traceContent, warmParkSeconds, type StoredDeploy } from '../domain/deploy.js';
import type { Agent, Deploy } from '../schemas/agents.js';

export const MASKED_SECRET = '***';

export interface PresenterSettings {
  agentUrl: AgentUrlSettings;
  runtimeImage: string;
}

export function agentUrl(slug: string, settings: AgentUrlSettings): string {
  const port = settings.port === null ? '' : `:${settings.port}`;
  return `${settings.scheme}://${slug}.${settings.domain}${port}`;
}

/** The agent as the API shows it: secrets masked, the model key never included. */
export function agentView(row: AgentRow, settings: PresenterSettings, accessKey: string | null = null): Agent {
  return {
    id: row.id,
    name: row.name,
    runtime: row.runtime as Agent['runtime'],
    framework: row.framework as Agent['framework'],
    model: row.model,
    status: row.status,
    url: agentUrl(row.slug, settings.agentUrl),
    access: row.access,
    rate_limit_rpm: row.rate_limit_rpm,
    access_key: accessKey,
    replicas: row.replicas,
    deploy: deployView(row.deploy, settings),
    tags: row.tags,
    metadata: row.metadata,
    error: row.error,
    version: row.version,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A stored deploy object as the API shows it (an agent's, or a deployment's copy): secret values masked. */
export function deployView(deploy: StoredDeploy, settings: PresenterSettings): Deploy {
  return {
    image: deploy.image ?? settings.runtimeImage,
    port: deploy.port,
    replicas: deploy.replicas,
    resources: { ...deploy.resources },
    env: deploy.env.map((entry) =>
      entry.secret ? { key: entry.key, value: MASKED_SECRET, secret: true } : { key: entry.key, value: entry.value, secret: false },
    ),
    auto_scale: deploy.auto_scale,
    min_replicas: deploy.min_replicas,
    max_replicas: deploy.max_replicas,
    scale_to_zero_after_seconds: scaleToZeroAfterSeconds(deploy),
    warm_park_seconds: warmParkSeconds(deploy),
    session_ttl_seconds: sessionTtlSeconds(deploy),
    trace_content: traceContent(deploy),
  };
}
