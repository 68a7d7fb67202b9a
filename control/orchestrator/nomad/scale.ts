import type { JobSpec } from '../../domain/job.js';
import { ApiError } from './http-client.js';
import type { JobsApi } from './jobs-api.js';
import { GROUP, jobId } from './job-spec.js';

/**
 * Scales through Nomad's job scale endpoint, which keeps the job's version history
 * readable ("scaled to N by the control API") and leaves the running allocations alone.
 * Nomad refuses it in two cases, and then the job is registered again with the count we
 * hold (`register`), which Nomad always accepts:
 * - a deployment is active (a rollout in flight): the new registration supersedes it and
 *   the rollout continues at the new count;
 * - the count is outside the group's Scaling Min/Max: job-spec.ts widens the range to
 *   include the count, so a manual scale to 0 or past min_replicas is never refused.
 * Returns how it was done, for the job's events.
 */
export async function scaleJob(jobs: JobsApi, spec: JobSpec, register: () => Promise<unknown>): Promise<'scaled' | 'registered'> {
  const job = await jobs.read(jobId(spec.agentId));
  if (!job || job.Stop) {
    await register();
    return 'registered';
  }
  const scaling = job.TaskGroups.find((group) => group.Name === GROUP)?.Scaling;
  const within = !scaling || (spec.count >= (scaling.Min ?? 0) && spec.count <= scaling.Max);
  if (within) {
    try {
      await jobs.scale(jobId(spec.agentId), spec.count, `scaled to ${spec.count} by the control API`);
      return 'scaled';
    } catch (error) {
      // 400 "job scaling blocked due to active deployment" or a Min/Max refusal: fall through.
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
    }
  }
  await register();
  return 'registered';
}
