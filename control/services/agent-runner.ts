import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { observedState, type ObservedState } from '../domain/agent-status.js';
import { jobSpecFor, parkingOf, type JobSettings } from '../domain/job-spec.js';
import type { Orchestrator } from '../orchestrator/types.js';
import type { AgentRow } from '../domain/agent.js';
import type { JobSpec, JobStatus } from '../domain/job.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { AgentObserved, ReconcilePassed, ReplicasChanged } from './agent-events.js';
import type { EdgeSync } from './edge-sync.js';
import type { AgentOperation, Step } from './fair-queue.js';
import { KeyedSerial } from './keyed-serial.js';
import { OrchestrationQueue } from './orchestration-queue.js';
import type { WebhookEvents } from './webhook-events.js';

/** What an AgentRunner works with. */
export interface AgentRunnerParts {
  db: Knex;
  orchestrator: Orchestrator;
  box: SecretBox;
  jobSettings: JobSettings;
  clock: Clock;
  logger: Logger;
  /** Handed the status each refresh reads: the agent's upstreams at the edge follow it. */
  edge: EdgeSync;
  /** ORCHESTRATOR_CONCURRENCY: orchestrator steps in flight at once, across all agents. */
  concurrency: number;
  /** Told when an agent becomes `crashed`, in the transaction that records it (agent.crashed). */
  events?: WebhookEvents;
}

/**
 * Keeps the orchestrator running what Postgres says, and Postgres showing what the
 * orchestrator reports. Postgres stays the source of truth: after a crash of the control
 * API, `reconcileAll` rebuilds every job from it.
 *
 * The API stores the desired state and hands the change to `request`, which returns at
 * once: the orchestrator's work (a pull, a rollout) runs afterwards in an
 * OrchestrationQueue, so no request waits for it and one account's slow deploys cannot
 * hold up another's. What the orchestrator did comes back as ReplicasChanged (a driver
 * tells it after each submit, scale and remove, and whenever it sees a replica change),
 * and only then is the agent refreshed: its status read once, for the edge and Postgres.
 */
export class AgentRunner {
  /** Refreshes per agent run one after another, so an older observation never overwrites a newer one. */
  private readonly refreshing: KeyedSerial;
  private readonly queue: OrchestrationQueue;
  private readonly agentObservedSubscribers: ((event: AgentObserved) => Promise<void>)[] = [];
  private readonly reconcilePassedSubscribers: ((event: ReconcilePassed) => void)[] = [];
  private closed = false;

  constructor(private readonly parts: AgentRunnerParts) {
    this.refreshing = new KeyedSerial((agentId, error) => parts.logger.warn({ err: error, agent_id: agentId }, 'could not record agent state'));
    this.queue = new OrchestrationQueue(parts.concurrency, (step) => this.perform(step), parts.logger.child({ component: 'orchestration-queue' }));
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

  /**
   * Takes no more steps or refreshes and waits for those in flight; what waited is redone
   * by the next start's reconcile.
   */
  async close(): Promise<void> {
    await this.queue.close();
    this.closed = true;
    await this.refreshing.idle();
  }

  /** The driver's word (ReplicasChanged, subscribed in control/compose.ts): the agent is refreshed. */
  replicasChanged({ agentId }: ReplicasChanged): void {
    if (!this.closed) void this.refresh(agentId);
  }

  /** Only hands the orchestrator its part: the driver tells ReplicasChanged when it is done, and the refresh follows from that. */
  private async perform({ operation, agentId }: Step): Promise<void> {
    const { db, orchestrator, box, jobSettings } = this.parts;
    if (operation === 'remove') {
      await orchestrator.remove(agentId);
      return;
    }
    const agent = await repositoriesOn(db).agents.findAny(agentId);
    if (!agent || agent.deployed_version === null) return;
    // A driver's scale sizes the job's current version, which is the canary's while one runs: a whole job then.
    if (operation === 'run' || agent.canary) await orchestrator.submit(await this.jobOf(agent));
    else await orchestrator.scale(agentId, agent.desired_replicas, parkingOf(agent));
  }

  /**
   * The agent's job. While a canary runs (issue 36) it is the canary's version at its own
   * replicas, with `stable`: the version it runs beside, built from that deployment's copy
   * of the configuration, at the agent's replica count.
   */
  private async jobOf(agent: AgentRow): Promise<JobSpec> {
    const { box, jobSettings } = this.parts;
    const spec = jobSpecFor(agent, box, jobSettings);
    if (!agent.canary) return spec;
    const stable = await repositoriesOn(this.parts.db).deployments.find(agent.id, agent.canary.stable_deployment_id);
    if (!stable) throw new Error(`the canary's stable deployment ${agent.canary.stable_deployment_id} is gone`);
    const stableAgent: AgentRow = {
      ...agent,
      deploy: stable.deploy,
      model: stable.model,
      provider: stable.provider,
      api_key_sealed: stable.api_key_sealed,
      system_prompt: stable.system_prompt,
      deployed_version: stable.agent_version,
      canary: null,
    };
    return { ...spec, count: agent.canary.strategy.replicas, stable: jobSpecFor(stableAgent, box, jobSettings) };
  }

  /**
   * Makes the orchestrator's jobs exactly the deployed agents, then brings every status up
   * to date: the pass that heals a lost notification, so it refreshes every agent whether
   * or not its driver tells of a change. An agent whose job cannot be built is kept as it
   * runs, not removed, and the pass goes on for the others (see `buildJobs`).
   */
  async reconcileAll(): Promise<void> {
    const agents = await repositoriesOn(this.parts.db).agents.deployed();
    const { specs, keep } = await this.buildJobs(agents);
    await this.parts.orchestrator.reconcile(specs, { keep });
    for (const subscriber of this.reconcilePassedSubscribers) subscriber({ agents: agents.length, unbuildable: keep.length });
    await Promise.all(agents.map((agent) => this.refresh(agent.id)));
  }

  /**
   * Each agent's job, or its id in `keep` when building it throws: a sealed value no
   * configured master key opens (a key left MASTER_KEYS too early), a damaged row. Leaving
   * such an agent out of the specs would have the orchestrator remove what runs for it;
   * throwing would stop the pass for every agent, on every pass. The log names the agent
   * and the error's message, never a value.
   */
  private async buildJobs(agents: AgentRow[]): Promise<{ specs: JobSpec[]; keep: string[] }> {
    const specs: JobSpec[] = [];
    const keep: string[] = [];
    for (const agent of agents) {
      try {
        specs.push(await this.jobOf(agent));
      } catch (error) {
        keep.push(agent.id);
        const message = error instanceof Error ? error.message : String(error);
        this.parts.logger.warn({ agent_id: agent.id, error: message }, "the agent's job could not be built: what runs for it is kept as it is");
      }
    }
    return { specs, keep };
  }

  /** ReconcilePassed: after each reconcile pass handed the orchestrator its jobs (metrics count the agents kept). */
  onReconcilePassed(subscriber: (event: ReconcilePassed) => void): void {
    this.reconcilePassedSubscribers.push(subscriber);
  }

  /** AgentObserved: after each refresh, with the agent as read and its job's status (the deployment tracker decides a rollout's end from them). */
  onAgentObserved(subscriber: (event: AgentObserved) => Promise<void>): void {
    this.agentObservedSubscribers.push(subscriber);
  }

  /** Reads the agent's row and its job's status once each, and hands them on: upstreams to the edge, the observed state to Postgres. */
  refresh(agentId: string): Promise<void> {
    return this.refreshing.run(agentId, async () => {
      const agent = await repositoriesOn(this.parts.db).agents.findAny(agentId);
      if (!agent) return;
      const job = await this.parts.orchestrator.status(agentId);
      await this.parts.edge.setUpstreams(agent, job);
      await this.writeObserved(agent, job);
      for (const subscriber of this.agentObservedSubscribers) await subscriber({ agent, job });
    });
  }

  private async writeObserved(agent: AgentRow, job: JobStatus | null): Promise<void> {
    const observed = observedState(agent.desired_replicas, job, agent.status, agent.parked_at !== null);
    if (observed.status === 'crashed' && agent.status !== 'crashed') await this.recordCrash(agent, observed);
    else if (observed.status !== agent.status || observed.replicas !== agent.replicas || observed.error !== agent.error) {
      await repositoriesOn(this.parts.db).agents.setObserved(agent.id, agent.version, observed, this.parts.clock.now());
    }
  }

  /** Every replica of the current version used up its restarts: the crash is recorded and announced once, together. */
  private async recordCrash(agent: AgentRow, observed: ObservedState): Promise<void> {
    const { db, clock, events } = this.parts;
    await inTransaction(db, async (repos) => {
      if (!(await repos.agents.enterObserved(agent.id, agent.version, observed, clock.now()))) return;
      const crashed = await repos.agents.findAny(agent.id);
      if (crashed) await events?.record(repos, 'agent.crashed', crashed, observed.error === null ? {} : { reason: observed.error });
    });
  }
}
