import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { observedState, type ObservedState } from '../domain/agent-status.js';
import { jobSpecFor, type JobSettings } from '../domain/job-spec.js';
import type { Orchestrator } from '../orchestrator/types.js';
import type { AgentRow } from '../domain/agent.js';
import type { JobSpec, JobStatus } from '../domain/job.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { EdgeSync } from './edge-sync.js';
import type { AgentOperation, Step } from './fair-queue.js';
import { KeyedSerial } from './keyed-serial.js';
import { OrchestrationQueue } from './orchestration-queue.js';
import type { WebhookEvents } from './webhook-events.js';

/** One reconcile pass: the deployed agents, and those whose job could not be built (kept as they run). */
export interface ReconcileRecord {
  agents: number;
  unbuildable: number;
}

export type ReconcileObserver = (pass: ReconcileRecord) => void;

/**
 * Keeps the orchestrator running what Postgres says, and Postgres showing what the
 * orchestrator reports. Postgres stays the source of truth: after a crash of the control
 * API, `reconcileAll` rebuilds every job from it.
 *
 * The API stores the desired state and hands the change to `request`, which returns at
 * once: the orchestrator's work (a pull, a rollout) runs afterwards in an
 * OrchestrationQueue, so no request waits for it and one account's slow deploys cannot
 * hold up another's.
 */
export class AgentRunner {
  /** Refreshes per agent run one after another, so an older observation never overwrites a newer one. */
  private readonly refreshing: KeyedSerial;
  private readonly queue: OrchestrationQueue;
  private readonly observers: ((agent: AgentRow, job: JobStatus | null) => Promise<void>)[] = [];
  private readonly reconcileObservers: ReconcileObserver[] = [];

  constructor(
    private readonly db: Knex,
    private readonly orchestrator: Orchestrator,
    private readonly box: SecretBox,
    private readonly jobSettings: JobSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly edge: EdgeSync,
    /** ORCHESTRATOR_CONCURRENCY: orchestrator steps in flight at once, across all agents. */
    concurrency: number,
    /** Told when an agent becomes `crashed`, in the transaction that records it (agent.crashed). */
    private readonly events?: WebhookEvents,
  ) {
    this.refreshing = new KeyedSerial((agentId, error) => logger.warn({ err: error, agent_id: agentId }, 'could not record agent state'));
    orchestrator.onChange((agentId) => void this.refresh(agentId));
    this.queue = new OrchestrationQueue(concurrency, (step) => this.perform(step), logger.child({ component: 'orchestration-queue' }));
  }

  /**
   * Queues `operation` for an agent whose desired state is already committed: `run` hands
   * the orchestrator the whole job, `scale` its replica count, `remove` (after the row is
   * deleted) takes everything away. Each reads the row when it runs, so the latest state wins.
   */
  request(operation: AgentOperation, agent: Pick<AgentRow, 'id' | 'account_id'>): void {
    this.queue.enqueue({ operation, agentId: agent.id, accountId: agent.account_id });
  }

  /** What the queue holds: steps waiting and steps in flight. */
  get pending(): { waiting: number; inFlight: number } {
    return this.queue.size;
  }

  /** Takes no more steps and waits for those in flight; what waited is redone by the next start's reconcile. */
  close(): Promise<void> {
    return this.queue.close();
  }

  private async perform({ operation, agentId }: Step): Promise<void> {
    if (operation === 'remove') {
      await this.orchestrator.remove(agentId);
      return;
    }
    const agent = await repositoriesOn(this.db).agents.findAny(agentId);
    if (!agent || agent.deployed_version === null) return;
    if (operation === 'run') await this.orchestrator.submit(jobSpecFor(agent, this.box, this.jobSettings));
    else await this.orchestrator.scale(agentId, agent.desired_replicas);
    await this.refresh(agentId);
  }

  /**
   * Makes the orchestrator's jobs exactly the deployed agents, then brings every status up
   * to date. An agent whose job cannot be built is kept as it runs, not removed, and the
   * pass goes on for the others (see `buildJobs`).
   */
  async reconcileAll(): Promise<void> {
    const agents = await repositoriesOn(this.db).agents.deployed();
    const { specs, keep } = this.buildJobs(agents);
    await this.orchestrator.reconcile(specs, { keep });
    for (const observer of this.reconcileObservers) observer({ agents: agents.length, unbuildable: keep.length });
    await Promise.all(agents.map((agent) => this.refresh(agent.id)));
  }

  /**
   * Each agent's job, or its id in `keep` when building it throws: a sealed value no
   * configured master key opens (a key left MASTER_KEYS too early), a damaged row. Leaving
   * such an agent out of the specs would have the orchestrator remove what runs for it;
   * throwing would stop the pass for every agent, on every pass. The log names the agent
   * and the error's message, never a value.
   */
  private buildJobs(agents: AgentRow[]): { specs: JobSpec[]; keep: string[] } {
    const specs: JobSpec[] = [];
    const keep: string[] = [];
    for (const agent of agents) {
      try {
        specs.push(jobSpecFor(agent, this.box, this.jobSettings));
      } catch (error) {
        keep.push(agent.id);
        const message = error instanceof Error ? error.message : String(error);
        this.logger.warn({ agent_id: agent.id, error: message }, "the agent's job could not be built: what runs for it is kept as it is");
      }
    }
    return { specs, keep };
  }

  /** Called after each reconcile pass handed the orchestrator its jobs (metrics count the agents kept). */
  onReconciled(observer: ReconcileObserver): void {
    this.reconcileObservers.push(observer);
  }

  /** Called after each refresh with the agent as stored and its job's status (the deployment tracker decides a rollout's end from them). */
  onObserved(observer: (agent: AgentRow, job: JobStatus | null) => Promise<void>): void {
    this.observers.push(observer);
  }

  refresh(agentId: string): Promise<void> {
    return this.refreshing.run(agentId, () => this.writeObserved(agentId));
  }

  private async writeObserved(agentId: string): Promise<void> {
    await this.edge.refreshUpstreams(agentId);
    const agents = repositoriesOn(this.db).agents;
    const agent = await agents.findAny(agentId);
    if (!agent) return;
    const job = await this.orchestrator.status(agentId);
    const observed = observedState(agent.desired_replicas, job, agent.status, agent.parked_at !== null);
    if (observed.status === 'crashed' && agent.status !== 'crashed') await this.recordCrash(agent, observed);
    else if (observed.status !== agent.status || observed.replicas !== agent.replicas || observed.error !== agent.error) {
      await agents.setObserved(agentId, agent.version, observed, this.clock.now());
    }
    for (const observer of this.observers) await observer(agent, job);
  }

  /** Every replica of the current version used up its restarts: the crash is recorded and announced once, together. */
  private async recordCrash(agent: AgentRow, observed: ObservedState): Promise<void> {
    await inTransaction(this.db, async (repos) => {
      if (!(await repos.agents.enterObserved(agent.id, agent.version, observed, this.clock.now()))) return;
      const crashed = await repos.agents.findAny(agent.id);
      if (crashed) await this.events?.record(repos, 'agent.crashed', crashed, observed.error === null ? {} : { reason: observed.error });
    });
  }
}
