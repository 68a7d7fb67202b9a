import type { AgentRow } from '../domain/agent.js';
import type { JobStatus, RolloutProgress } from '../domain/job.js';
import type { Orchestrator } from '../orchestrator/types.js';

/**
 * The hops of the control API that run by subscription rather than by a call: whoever
 * publishes one does not know who listens, so a reader following a flow would lose it
 * there. Each hop has an event type of its own and a `subscribe…` function naming both
 * ends; control/compose.ts makes every subscription, so a search for the event's name
 * finds the publisher, the subscription and the subscriber.
 */

/**
 * Driver → AgentRunner: something about the agent's replicas changed, or a submit, scale
 * or remove of it ended. The one trigger of an agent's refresh besides the reconcile pass.
 */
export interface ReplicasChanged {
  agentId: string;
}

/** Driver → DeploymentTracker: a step of a rollout (pulling, starting, health_check, routing, draining). */
export interface RolloutStepReported {
  step: RolloutProgress;
}

/**
 * AgentRunner → DeploymentTracker: what one refresh saw, the agent as it was read and its
 * job's status, after the runner wrote it to Postgres; the tracker decides from it whether
 * the rollout ended.
 */
export interface AgentObserved {
  agent: AgentRow;
  job: JobStatus | null;
}

/** AgentRunner → metrics: a reconcile pass handed the orchestrator its jobs; some agents' could not be built. */
export interface ReconcilePassed {
  agents: number;
  unbuildable: number;
}

export function subscribeReplicasChanged(driver: Pick<Orchestrator, 'onChange'>, runner: { replicasChanged(event: ReplicasChanged): void }): void {
  driver.onChange((agentId) => runner.replicasChanged({ agentId }));
}

export function subscribeRolloutStepReported(driver: Pick<Orchestrator, 'onProgress'>, tracker: { rolloutStepReported(event: RolloutStepReported): void }): void {
  driver.onProgress((step) => tracker.rolloutStepReported({ step }));
}

export function subscribeAgentObserved(
  runner: { onAgentObserved(subscriber: (event: AgentObserved) => Promise<void>): void },
  tracker: { agentObserved(event: AgentObserved): Promise<void> },
): void {
  runner.onAgentObserved((event) => tracker.agentObserved(event));
}

export function subscribeReconcilePassed(
  runner: { onReconcilePassed(subscriber: (event: ReconcilePassed) => void): void },
  metrics: { reconcilePassed(event: ReconcilePassed): void },
): void {
  runner.onReconcilePassed((event) => metrics.reconcilePassed(event));
}
