import type { JobSpec } from '../../domain/job.js';
import type { NomadDeployment } from './api-types.js';

/**
 * What a submit does to a job whose canaries wait for promotion (issue 36). The platform
 * asks in specs, as of the podman driver (JobSpec.stable): the canary's version again
 * without `stable` promotes it, the stable spec aborts it. On Nomad those are two calls
 * on the deployment before the job is registered:
 *
 * - promote: POST /v1/deployment/promote first, so that the registration that follows
 *   keeps the canaries. Registering over unpromoted canaries would stop them and place new
 *   allocations instead (scheduler/reconciler/reconcile_cluster.go,
 *   `cancelUnneededCanaries`: "Cancel any non-promoted canaries from the older
 *   deployment"); promoted ones are updated in place and the old allocations roll.
 * - abort: POST /v1/deployment/fail first: the canaries stop, and auto_revert registers
 *   the latest stable version in the same update (deploymentwatcher/deployment_watcher.go,
 *   `FailDeployment`), which runs on the allocations that never stopped. The stable spec
 *   registered after it is then unchanged, or at most an in-place update.
 *
 * Anything else (no canary waiting, or a canary spec asked again by a scale or a
 * reconcile) is a plain registration: Nomad keeps an unchanged job as it is.
 */
export type CanaryStep = { kind: 'register' } | { kind: 'promote' | 'abort'; deploymentId: string };

/**
 * `deployment` is the job's latest; `deploymentVersion` our version of the job version it
 * rolls out (from the job's Meta), null when unknown.
 */
export function canaryStep(spec: JobSpec, deployment: NomadDeployment | null, deploymentVersion: number | null): CanaryStep {
  if (spec.stable || !deployment || deploymentVersion === null || !requiresPromotion(deployment)) return { kind: 'register' };
  return { kind: spec.version === deploymentVersion ? 'promote' : 'abort', deploymentId: deployment.ID };
}

/** nomad/structs/deployment.go, `Deployment.RequiresPromotion`: running, with a group's canaries not promoted. */
export function requiresPromotion(deployment: NomadDeployment): boolean {
  if (deployment.Status !== 'running') return false;
  return Object.values(deployment.TaskGroups ?? {}).some((group) => group.DesiredCanaries > 0 && !group.Promoted);
}
