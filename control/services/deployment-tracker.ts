import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { AgentRow } from '../domain/agent.js';
import type { DeploymentEventRow, DeploymentRow } from '../domain/deployment.js';
import type { JobStatus, RolloutProgress } from '../domain/job.js';
import { rolloutOutcome } from '../domain/rollout-outcome.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { EventNotifier } from './event-notifier.js';
import type { AgentObserved, RolloutStepReported } from './agent-events.js';
import { KeyedSerial } from './keyed-serial.js';
import type { WebhookEvents } from './webhook-events.js';

/**
 * Writes each rollout's history as it happens: the drivers' steps (RolloutStepReported)
 * become events of the in-progress deployment of their version, and after every refresh of
 * an agent (AgentObserved) the job's status decides whether that deployment
 * succeeded or failed (domain/rollout-outcome.ts). A deployment ends once: its end and its
 * last event are written in one transaction, and `finish` only changes one in progress, so a
 * newer deploy that superseded it meanwhile wins. A restarted control API ends what was in
 * progress at its first reconcile, which refreshes every agent.
 */
export class DeploymentTracker {
  /** Per agent, so steps are written in the order the driver reported them, and the end after them. */
  private readonly serial: KeyedSerial;

  constructor(
    private readonly db: Knex,
    /** The driver's clock: the steps' times come from it too. */
    private readonly clock: Clock,
    private readonly notifier: EventNotifier,
    private readonly logger: Logger,
    /** Told of each deployment's end (agent.deployed, agent.deploy_failed), in the transaction that records it. */
    private readonly events?: WebhookEvents,
    /** A canary whose replicas cannot start (issue 36): the canary service aborts it as failed. */
    private readonly onCanaryFailed?: (agent: AgentRow, deployment: DeploymentRow, reason: string) => Promise<void>,
  ) {
    this.serial = new KeyedSerial((agentId, error) => logger.warn({ err: error, agent_id: agentId }, 'could not record deployment progress'));
  }

  /** RolloutStepReported, subscribed in control/compose.ts. */
  rolloutStepReported({ step }: RolloutStepReported): void {
    void this.record(step);
  }

  /** AgentObserved, subscribed in control/compose.ts. */
  agentObserved({ agent, job }: AgentObserved): Promise<void> {
    return this.settle(agent, job);
  }

  /** A driver's step; nothing when its version has no deployment in progress (a scale, a replica's restart later on), or when it was recorded already. */
  record(progress: RolloutProgress): Promise<void> {
    return this.serial.run(progress.agentId, () => this.append(progress));
  }

  /** Ends the deployment in progress of the agent's deployed version once its job says how it went. */
  settle(agent: AgentRow, job: JobStatus | null): Promise<void> {
    return this.serial.run(agent.id, () => this.conclude(agent, job));
  }

  private async append(progress: RolloutProgress): Promise<void> {
    const deployments = repositoriesOn(this.db).deployments;
    const deployment = await deployments.findByVersion(progress.agentId, progress.version);
    if (deployment?.status !== 'in_progress') return;
    if (progress.orchestratorVersion !== undefined && deployment.orchestrator_version !== progress.orchestratorVersion) {
      await deployments.setOrchestratorVersion(deployment.id, progress.orchestratorVersion);
    }
    if (repeats(await deployments.eventsAfter(deployment.id, 0), progress)) return;
    const { phase, replicaId, message, at } = progress;
    await deployments.addEvent({ deployment_id: deployment.id, phase, replica_id: replicaId, message, at });
    this.notifier.notify(deployment.id);
  }

  private async conclude(agent: AgentRow, job: JobStatus | null): Promise<void> {
    if (agent.deployed_version === null) return;
    const deployment = await repositoriesOn(this.db).deployments.findByVersion(agent.id, agent.deployed_version);
    if (deployment?.status !== 'in_progress') return;
    if (agent.canary?.deployment_id === deployment.id) return this.watchCanary(agent, deployment, job);
    const target = agent.deploy.auto_scale ? { min: agent.deploy.min_replicas, max: agent.deploy.max_replicas } : agent.desired_replicas;
    const outcome = rolloutOutcome(job, target, deployment.agent_version);
    if (!outcome) return;
    const now = this.clock.now();
    const [error, message] = outcome.status === 'failed' ? [outcome.error, outcome.error] : [null, outcome.message];
    const ended = await inTransaction(this.db, async (repos) => {
      const finished = await repos.deployments.finish(deployment.id, outcome.status, error, now);
      if (!finished) return false;
      await repos.deployments.addEvent({ deployment_id: deployment.id, phase: outcome.status, replica_id: null, message, at: now });
      // The agent as it stands now (the runner has just written what it observed), not as it was read before.
      const current = await repos.agents.findAny(agent.id);
      const type = outcome.status === 'succeeded' ? 'agent.deployed' : 'agent.deploy_failed';
      if (current) await this.events?.record(repos, type, current, { deployment: finished, ...(error === null ? {} : { reason: error }) });
      return true;
    });
    if (!ended) return;
    this.logger.info({ agent_id: agent.id, deployment_id: deployment.id, status: outcome.status }, message);
    this.notifier.notify(deployment.id);
  }

  /**
   * A running canary's deployment does not end by its replicas: its promote or abort ends it
   * (CanaryService). Its own replicas say when it serves (the `canary` event, once) or that
   * it cannot start, which aborts it as failed.
   */
  private async watchCanary(agent: AgentRow, deployment: DeploymentRow, job: JobStatus | null): Promise<void> {
    const canary = agent.canary!;
    const own = job && { ...job, replicas: job.replicas.filter((replica) => replica.version === deployment.agent_version) };
    const outcome = rolloutOutcome(own, canary.strategy.replicas, deployment.agent_version);
    if (outcome?.status === 'failed') {
      await this.onCanaryFailed?.(agent, deployment, `the canary could not start: ${outcome.error}`);
      return;
    }
    if (outcome?.status !== 'succeeded') return;
    const deployments = repositoriesOn(this.db).deployments;
    if ((await deployments.eventsAfter(deployment.id, 0)).some((event) => event.phase === 'canary')) return;
    const replicas = canary.strategy.replicas;
    await deployments.addEvent({
      deployment_id: deployment.id, phase: 'canary', replica_id: null, at: this.clock.now(),
      message: `canary serving ${canary.strategy.percent}% of requests on ${replicas} replica${replicas === 1 ? '' : 's'}`,
    });
    this.notifier.notify(deployment.id);
  }
}

/**
 * Each step is recorded once per deployment: a replica's phase, or a step of the whole job
 * (no replica) with its message. A driver reports again what it sees after a restart of the
 * control API, and a replica that restarts is routed again without being a new step of the
 * rollout; a new registration on Nomad says its new version, so it is a step of its own.
 */
function repeats(events: DeploymentEventRow[], progress: RolloutProgress): boolean {
  return events.some((event) =>
    event.phase === progress.phase && event.replica_id === progress.replicaId && (progress.replicaId !== null || event.message === progress.message));
}
