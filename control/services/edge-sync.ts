import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { DEFAULT_CALLER_RPM, type EdgeAgent } from '../../contract/edge-keys.js';
import type { EdgeProjection, ProjectedDomain } from '../edge/projection.js';
import { limitsOf } from '../domain/plans.js';
import { wakeable } from '../domain/scale-to-zero.js';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../db/dependency-outage.js';
import { PlatformError } from '../domain/errors.js';
import type { Orchestrator } from '../orchestrator/types.js';
import type { AgentRow } from '../domain/agent.js';
import type { JobStatus } from '../domain/job.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';

/**
 * Keeps Redis's edge projection in step with Postgres. Writes that could let a caller
 * in (revoking a key, making an agent private) happen inside the Postgres transaction,
 * before it commits: if Redis cannot take them, nothing changes. Each agent's rebuild
 * holds a share lock on its row, so it cannot restore a key a concurrent revoke removed.
 *
 * The one writer of parking's projection (docs/scaling.md, "Parked: which is which"):
 * Postgres's `agents.parked_at` says whether an agent is parked; the agent hash's
 * `wakeable` is derived from the row here (`edgeAgent`, re-projected on a change by
 * `projectParking`), and the wake key is ended or refused only through here
 * (`setUpstreams`, `rebuild`, `refuseWake`).
 */
export class EdgeSync {
  constructor(
    private readonly db: Knex,
    private readonly projection: EdgeProjection,
    /** Read only by `rebuild`: a refresh hands its status to `setUpstreams`. */
    private readonly jobs: Pick<Orchestrator, 'status'>,
    private readonly logger: Logger,
    /**
     * Every active custom domain with its certificate (issue 34), read by `rebuild`; none:
     * the rebuild leaves the custom domains' projection as it is.
     */
    private readonly listActiveDomains?: () => Promise<ProjectedDomain[]>,
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
   * After a change of the agent's replicas (a deploy, a scale, a park, a wake), in its
   * transaction: the edge learns whether a request that finds no replica may start it.
   */
  async projectParking(repos: Repositories, before: AgentRow, after: AgentRow): Promise<void> {
    if (wakeable(before) !== wakeable(after)) await this.putAgent(repos, after);
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
      // The running canary's split (issue 36): its share and affinity, and its number for the preview hostname.
      canary: agent.canary ? { deployment: agent.canary.number, percent: agent.canary.strategy.percent, affinity: agent.canary.strategy.affinity } : null,
    };
  }

  /** Rebuilds the whole projection from Postgres and the orchestrator; agents gone from Postgres leave it. */
  async rebuild(): Promise<void> {
    const ids = await repositoriesOn(this.db).agents.allIds();
    // Read first, so each agent's replace writes its hostnames' set with it: a rebuild never
    // leaves a routed custom domain without its set, even for a moment.
    const domains = this.listActiveDomains ? await this.listActiveDomains() : undefined;
    const bySlug = new Map<string, string[]>();
    for (const { slug, hostname } of domains ?? []) bySlug.set(slug, [...(bySlug.get(slug) ?? []), hostname]);
    const hostnamesOf = (slug: string) => (domains ? (bySlug.get(slug) ?? []) : undefined);
    const keep = new Set<string>();
    for (const id of ids) {
      await inTransaction(this.db, async (repos) => {
        const agent = await repos.agents.lockShared(id);
        if (!agent) return;
        keep.add(agent.slug);
        await this.projection.replace({
          agent: await this.edgeAgent(repos, agent),
          keyHashes: await repos.accessKeys.hashesForAgent(agent.id),
          ...versionUpstreamsOf(await this.jobs.status(agent.id)),
          domains: hostnamesOf(agent.slug),
        });
      });
    }
    await this.projection.prune(keep);
    if (domains) await this.projection.replaceDomains(domains.filter((domain) => keep.has(domain.slug)));
    this.logger.debug({ agents: keep.size }, 'edge projection rebuilt');
  }

  /** Tells the edge a wake of the agent failed: Checks waiting for it answer 503 with `body`. */
  async refuseWake(agentId: string, body: string): Promise<void> {
    const agent = await repositoriesOn(this.db).agents.findAny(agentId);
    if (agent) await this.projection.refuseWake(agent.slug, body);
  }

  /**
   * The agent's routable replicas as `job` reports them (a refresh's one status read);
   * outside any transaction, as it only follows the orchestrator. While a canary runs, the
   * stable version's go to the upstreams and the canary's to their own set; the canary's set
   * is written first, so a canary replica is never in both.
   */
  async setUpstreams(agent: Pick<AgentRow, 'slug' | 'canary'>, job: JobStatus | null): Promise<void> {
    const { upstreams, canaryUpstreams } = versionUpstreamsOf(job);
    // Only while the row names a canary: its end (putAgent) deletes the set, and a refresh
    // that still sees both versions after it must not bring it back; other agents write nothing more.
    if (agent.canary) await this.projection.setCanaryUpstreams(agent.slug, canaryUpstreams);
    await this.projection.setUpstreams(agent.slug, upstreams);
  }
}

/** Running replicas' addresses: all of them, or with a canary running, the stable version's and the canary's apart. */
function versionUpstreamsOf(job: JobStatus | null): { upstreams: string[]; canaryUpstreams: string[] } {
  const running = (job?.replicas ?? []).filter((r) => r.state === 'running' && r.address);
  if (job?.stableVersion === undefined) return { upstreams: running.map((r) => r.address!), canaryUpstreams: [] };
  return {
    upstreams: running.filter((r) => r.version === job.stableVersion).map((r) => r.address!),
    canaryUpstreams: running.filter((r) => r.version === job.version).map((r) => r.address!),
  };
}
