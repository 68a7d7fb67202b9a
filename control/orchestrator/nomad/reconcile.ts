import type { JobSpec } from '../../domain/job.js';
import type { NomadJobRead } from './api-types.js';
import { GROUP } from './job-spec.js';

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
 * stopped or older job is submitted; a job of an agent not in `specs` is removed, unless
 * the agent is in `keep` (its job could not be built: what runs is left alone).
 */
export function planReconcile(specs: JobSpec[], existing: Map<string, NomadJobRead>, keep: readonly string[] = []): ReconcileAction[] {
  const actions: ReconcileAction[] = [];
  for (const spec of specs) {
    const job = existing.get(spec.agentId);
    const version = Number(job?.Meta?.agent_version ?? NaN);
    const count = job?.TaskGroups.find((group) => group.Name === GROUP)?.Count;
    if (!job || job.Stop || version !== spec.version) actions.push({ kind: 'submit', spec });
    else if (count !== spec.count && !spec.scaling.enabled) actions.push({ kind: 'scale', spec });
    else actions.push({ kind: 'adopt', spec });
  }
  const wanted = new Set([...specs.map((spec) => spec.agentId), ...keep]);
  for (const agentId of existing.keys()) if (!wanted.has(agentId)) actions.push({ kind: 'remove', agentId });
  return actions;
}
