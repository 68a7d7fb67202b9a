import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { DEFAULT_CALLER_RPM, type EdgeAgent } from '../../contract/edge-keys.js';
import type { EdgeProjection } from '../edge/projection.js';
import { limitsOf } from '../domain/plans.js';
import { wakeable } from '../domain/scale-to-zero.js';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../dependency-outage.js';
import { PlatformError } from '../errors.js';
import type { Orchestrator } from '../orchestrator/types.js';
import type { AgentRow } from '../domain/agent.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';

/**
 * Keeps Redis's edge projection in step with Postgres. Writes that could let a caller
 * in (revoking a key, making an agent private) happen inside the Postgres transaction,
 * before it commits: if Redis cannot take them, nothing changes. Each agent's rebuild
 * holds a share lock on its row, so it cannot restore a key a concurrent revoke removed.
 */
export class EdgeSync {
  constructor(
    private readonly db: Knex,
    private readonly projection: EdgeProjection,
    private readonly orchestrator: Orchestrator | undefined,
    private readonly logger: Logger,
  ) {}

  /**
   * Runs a projection write that belongs to a Postgres change; a Redis failure becomes
   * EDGE_UNAVAILABLE, thrown inside the transaction so that it rolls back.
   */
  async write(change: (projection: EdgeProjection) => Promise<void>): Promise<void> {
    try {
      await change(this.projection);
    } catch (error) {
      this.logger.error({ err: error }, 'edge projection write failed');
      throw new PlatformError('EDGE_UNAVAILABLE', undefined, { retry_after: OUTAGE_RETRY_AFTER_SECONDS });
    }
  }

  /** Projects the agent's settings (access, limits) as they are in `agent`. */
  async putAgent(repos: Repositories, agent: AgentRow): Promise<void> {
    const edgeAgent = await this.edgeAgent(repos, agent);
    await this.write((projection) => projection.putAgent(edgeAgent));
  }

  /**
   * Re-projects every agent of the account, for a change that reaches them all (the plan's
   * max_agent_rpm). Run inside the transaction that changed the account, after the change.
   */
  async putAccountAgents(repos: Repositories, accountId: string): Promise<void> {
    for (const agent of await repos.agents.ofAccount(accountId)) await this.putAgent(repos, agent);
  }

  async edgeAgent(repos: Repositories, agent: AgentRow): Promise<EdgeAgent> {
    const account = await repos.accounts.find(agent.account_id);
    return {
      id: agent.id,
      accountId: agent.account_id,
      slug: agent.slug,
      access: agent.access,
      callerRpm: agent.rate_limit_rpm ?? DEFAULT_CALLER_RPM,
      agentRpm: limitsOf(account?.plan ?? 'free').max_agent_rpm,
      wakeable: wakeable(agent),
    };
  }

  /** Running replicas' addresses, as the orchestrator reports them. */
  async upstreamsOf(agentId: string): Promise<string[]> {
    const status = await this.orchestrator?.status(agentId);
    return (status?.replicas ?? []).filter((r) => r.state === 'running' && r.address).map((r) => r.address!);
  }

  /** Rebuilds the whole projection from Postgres and the orchestrator; agents gone from Postgres leave it. */
  async rebuild(): Promise<void> {
    const ids = await repositoriesOn(this.db).agents.allIds();
    const keep = new Set<string>();
    for (const id of ids) {
      await inTransaction(this.db, async (repos) => {
        const agent = await repos.agents.lockShared(id);
        if (!agent) return;
        keep.add(agent.slug);
        await this.projection.replace({
          agent: await this.edgeAgent(repos, agent),
          keyHashes: await repos.accessKeys.hashesForAgent(agent.id),
          upstreams: await this.upstreamsOf(agent.id),
        });
      });
    }
    await this.projection.prune(keep);
    this.logger.debug({ agents: keep.size }, 'edge projection rebuilt');
  }

  /** Tells the edge a wake of the agent failed: Checks waiting for it answer 503 with `body`. */
  async refuseWake(agentId: string, body: string): Promise<void> {
    const agent = await repositoriesOn(this.db).agents.findAny(agentId);
    if (agent) await this.projection.refuseWake(agent.slug, body);
  }

  /** Updates the running replicas of one agent; outside any transaction (it only follows the orchestrator). */
  async refreshUpstreams(agentId: string): Promise<void> {
    const agent = await repositoriesOn(this.db).agents.findAny(agentId);
    if (agent) await this.projection.setUpstreams(agent.slug, await this.upstreamsOf(agentId));
  }
}
