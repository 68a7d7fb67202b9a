import { ApiError } from './http-client.js';
import type { ApiClient } from './http-client.js';
import type { NomadSettings } from './settings.js';

export interface PreflightProblem {
  setting: string;
  message: string;
}

/**
 * What would keep every agent from running, checked once at start so an operator reads
 * it in the control API's log instead of guessing from agents stuck in `pending`:
 *
 * - Consul must answer at CONSUL_HTTP_ADDR. A Consul agent listens on 127.0.0.1 unless
 *   its `client_addr` says otherwise, so a control API in a bridge network (a docker
 *   task's default) cannot reach the node's agent at the node's address.
 * - The agents' node pool must exist: Nomad refuses to register a job in a pool it does
 *   not know (nomad/job_endpoint_hook_node_pool.go).
 */
export async function preflight(nomad: ApiClient, consul: ApiClient, settings: NomadSettings): Promise<PreflightProblem[]> {
  const problems: PreflightProblem[] = [];
  try {
    await consul.json('GET', '/v1/status/leader');
  } catch (error) {
    problems.push({
      setting: 'CONSUL_HTTP_ADDR',
      message:
        `Consul does not answer at ${settings.consul.address} (${(error as Error).message}). A Consul agent's HTTP API listens on ` +
        '127.0.0.1 unless its client_addr is set: run the control API with host networking and CONSUL_HTTP_ADDR=http://127.0.0.1:8500 ' +
        '(nomad-jobs/control.nomad.hcl does), or set client_addr on the agent. Until then no replica becomes routable.',
    });
  }
  try {
    await nomad.json('GET', `/v1/node/pool/${encodeURIComponent(settings.agentNodePool)}`, { query: { region: settings.region ?? undefined } });
  } catch (error) {
    const missing = error instanceof ApiError && error.status === 404;
    problems.push({
      setting: 'NOMAD_AGENT_NODE_POOL',
      message: missing
        ? `Nomad has no node pool "${settings.agentNodePool}": every agent job will be refused. Create it (nomad node pool apply, see docs/nomad.md "Agent nodes") and put the agent nodes in it (client { node_pool = "${settings.agentNodePool}" }).`
        : `Could not read Nomad node pool "${settings.agentNodePool}" at ${settings.nomad.address}: ${(error as Error).message}`,
    });
  }
  return problems;
}
