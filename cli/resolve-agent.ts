import type { Agent } from '../control/schemas/agents.js';
import type { ApiClient } from './api-client.js';
import { ApiRefused, UsageError } from './errors.js';

interface AgentPage {
  agents: Agent[];
  has_next: boolean;
}

/** An agent's slug: the first label of its URL's hostname (http://<slug>.<agent domain>). */
export const slugOf = (agent: Agent) => new URL(agent.url).hostname.split('.')[0]!;

/**
 * `<agent>` as a user types it: an id (agt_…), a slug, or a name no other agent of the
 * account has. An unknown one is the API's 404 NOT_FOUND (exit 1); a name two agents
 * share is a usage error (exit 2) listing their ids, since the command line must say which.
 */
export async function resolveAgent(api: ApiClient, reference: string): Promise<Agent> {
  if (reference.startsWith('agt_')) return api.request<Agent>('GET', `/agents/${encodeURIComponent(reference)}`);
  const agents = await allAgents(api);
  const bySlug = agents.find((agent) => slugOf(agent) === reference);
  if (bySlug) return bySlug;
  const named = agents.filter((agent) => agent.name === reference);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) {
    throw new UsageError(`${named.length} agents are named ${JSON.stringify(reference)}: give an id or slug (${named.map((agent) => `${agent.id} ${slugOf(agent)}`).join(', ')})`);
  }
  throw new ApiRefused(404, 'NOT_FOUND', `no agent with the id, slug or name ${JSON.stringify(reference)} in your account`);
}

async function allAgents(api: ApiClient): Promise<Agent[]> {
  const agents: Agent[] = [];
  for (let page = 1; ; page++) {
    const result = await api.request<AgentPage>('GET', '/agents', { query: { page, page_size: 100 } });
    agents.push(...result.agents);
    if (!result.has_next) return agents;
  }
}
