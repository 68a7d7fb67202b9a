import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { observedState } from '../domain/agent-status.js';
import { jobSpecFor, type JobSettings } from '../domain/job-spec.js';
import type { Orchestrator } from '../orchestrator/types.js';
import { repositoriesOn } from '../repositories/index.js';
import type { EdgeSync } from './edge-sync.js';

/**
 * Keeps the orchestrator running what Postgres says, and Postgres showing what the
 * orchestrator reports. Postgres stays the source of truth: after a crash of the control
 * API, `reconcileAll` rebuilds every job from it.
 */
export class AgentRunner {
  /** Refreshes per agent run one after another, so an older observation never overwrites a newer one. */
  private readonly refreshing = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Knex,
    private readonly orchestrator: Orchestrator,
    private readonly box: SecretBox,
    private readonly jobSettings: JobSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly edge: EdgeSync,
  ) {
    orchestrator.onChange((agentId) => void this.refresh(agentId));
  }

  /** Hands the agent's current configuration to the orchestrator. */
  async run(agentId: string): Promise<void> {
    const agent = await repositoriesOn(this.db).agents.findAny(agentId);
    if (!agent || agent.deployed_version === null) return;
    await this.orchestrator.submit(jobSpecFor(agent, this.box, this.jobSettings));
    await this.refresh(agentId);
  }

  async scale(agentId: string, count: number): Promise<void> {
    await this.orchestrator.scale(agentId, count);
    await this.refresh(agentId);
  }

  async remove(agentId: string): Promise<void> {
    await this.orchestrator.remove(agentId);
  }

  /** Makes the orchestrator's jobs exactly the deployed agents, then brings every status up to date. */
  async reconcileAll(): Promise<void> {
    const agents = await repositoriesOn(this.db).agents.deployed();
    await this.orchestrator.reconcile(agents.map((agent) => jobSpecFor(agent, this.box, this.jobSettings)));
    await Promise.all(agents.map((agent) => this.refresh(agent.id)));
  }

  refresh(agentId: string): Promise<void> {
    const previous = this.refreshing.get(agentId) ?? Promise.resolve();
    const next = previous.then(() => this.writeObserved(agentId)).catch((error) => {
      this.logger.warn({ err: error, agent_id: agentId }, 'could not record agent state');
    });
    this.refreshing.set(agentId, next);
    void next.finally(() => {
      if (this.refreshing.get(agentId) === next) this.refreshing.delete(agentId);
    });
    return next;
  }

  private async writeObserved(agentId: string): Promise<void> {
    await this.edge.refreshUpstreams(agentId);
    const agents = repositoriesOn(this.db).agents;
    const agent = await agents.findAny(agentId);
    if (!agent) return;
    const observed = observedState(agent.desired_replicas, await this.orchestrator.status(agentId), agent.status);
    if (observed.status === agent.status && observed.replicas === agent.replicas && observed.error === agent.error) return;
    await agents.setObserved(agentId, agent.version, observed, this.clock.now());
  }
}
