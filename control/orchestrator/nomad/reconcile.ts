import type { JobSpec } from '../../domain/job.js';
import type { NomadJobRead } from './api-types.js';
import { canariesOf, canaryCount, groupCount, GROUP } from './job-spec.js';

export type ReconcileAction =
  | { kind: 'adopt'; spec: JobSpec }
  | { kind: 'scale'; spec: JobSpec }
  | { kind: 'submit'; spec: JobSpec }
  | { kind: 'remove'; agentId: string };

/**
 * What makes Nomad's `agent-*` jobs exactly `specs`: a job already running the spec's
 * version with its count is adopted as it is (no re-registration, so no rollout after a
 * restart of the control API); the same version with another count is scaled, unless
 * auto-scaling is on (the autoscaler owns the count then, and would be fought); a missing,
 * stopped or older job is submitted, and so is one whose canaries are not the spec's (a
 * promotion or an abort the control API decided and did not carry out, or a canary whose
 * stable count changed: Nomad refuses to scale during the canary's deployment); a job of
 * an agent not in `specs` is removed, unless the agent is in `keep` (its job could not be
 * built: what runs is left alone).
 */
export function planReconcile(specs: JobSpec[], existing: Map<string, NomadJobRead>, keep: readonly string[] = []): ReconcileAction[] {
  const actions: ReconcileAction[] = [];
  for (const spec of specs) {
    const job = existing.get(spec.agentId);
    const version = Number(job?.Meta?.agent_version ?? NaN);
    const countDiffers = job?.TaskGroups.find((group) => group.Name === GROUP)?.Count !== groupCount(spec);
    if (!job || job.Stop || version !== spec.version || canariesOf(job) !== canaryCount(spec) || (spec.stable && countDiffers)) actions.push({ kind: 'submit', spec });
    else if (countDiffers && !spec.scaling.enabled) actions.push({ kind: 'scale', spec });
    else actions.push({ kind: 'adopt', spec });
  }
  const wanted = new Set([...specs.map((spec) => spec.agentId), ...keep]);
  for (const agentId of existing.keys()) if (!wanted.has(agentId)) actions.push({ kind: 'remove', agentId });
  return actions;
}
