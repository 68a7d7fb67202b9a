import type { JobSpec } from '../../domain/job.js';
import type { NomadJobRead } from './api-types.js';
import { ApiError, enforceIndexRefused } from './http-client.js';
import type { JobsApi } from './jobs-api.js';
import { GROUP, jobId } from './job-spec.js';

/** Registrations of the job as read, each after reading it again because it changed meanwhile. */
const RESUBMIT_ATTEMPTS = 3;

/**
 * Scales through Nomad's job scale endpoint. Nomad commits a scale as a registration
 * (nomad/job_endpoint.go, `Job.Scale`): a new job version, whose allocations the scheduler
 * moves to it in place (a count changes no task: scheduler/util.go, `tasksUpdated`), and a
 * deployment of that version until they are healthy again (scheduler/reconciler/
 * reconcile_cluster.go, `createDeployment`). The agent's version (the job's Meta) stays.
 *
 * Nomad refuses the endpoint while a deployment is active (a rollout, or the last scale's)
 * and for a count outside the group's Scaling Min/Max. The driver then does what Job.Scale
 * does: it registers the job as Nomad holds it with the new count (the range widened to
 * include it, as job-spec.ts widens it), only if nothing changed the job since it was read
 * (EnforceIndex, as Job.Scale's own commit), reading it again when something did. Never the
 * spec this copy of the control API holds: the other copy may have deployed a newer version
 * since, which that would roll back; and a scale leaves the secrets alone. The registration
 * supersedes an active deployment (Nomad cancels it) and the rollout goes on at the new
 * count. A job Nomad does not run (gone, or stopped) is registered whole by `register`.
 */
export async function scaleJob(jobs: JobsApi, spec: JobSpec, register: () => Promise<unknown>): Promise<'scaled' | 'resubmitted' | 'registered'> {
  for (let attempt = 1; ; attempt += 1) {
    const job = await jobs.read(jobId(spec.agentId));
    if (!job || job.Stop) {
      await register();
      return 'registered';
    }
    if (attempt === 1 && withinScaling(job, spec.count)) {
      try {
        await jobs.scale(jobId(spec.agentId), spec.count, `scaled to ${spec.count} by the control API`);
        return 'scaled';
      } catch (error) {
        // 400 "job scaling blocked due to active deployment" or a Min/Max refusal: registered below.
        if (!(error instanceof ApiError) || error.status >= 500) throw error;
      }
    }
    try {
      await jobs.registerOver(withCount(job, spec.count));
      return 'resubmitted';
    } catch (error) {
      if (attempt === RESUBMIT_ATTEMPTS || !changedSinceRead(error)) throw error;
    }
  }
}

function withinScaling(job: NomadJobRead, count: number): boolean {
  const scaling = job.TaskGroups.find((group) => group.Name === GROUP)?.Scaling;
  return !scaling || (count >= (scaling.Min ?? 0) && count <= scaling.Max);
}

/** The job with the agent group at `count`, its Scaling range stretched to hold it: Nomad refuses a count outside it. */
function withCount(job: NomadJobRead, count: number): NomadJobRead {
  return {
    ...job,
    TaskGroups: job.TaskGroups.map((group) => {
      if (group.Name !== GROUP) return group;
      const scaling = group.Scaling ? { ...group.Scaling, Min: Math.min(group.Scaling.Min ?? count, count), Max: Math.max(group.Scaling.Max, count) } : group.Scaling;
      return { ...group, Count: count, Scaling: scaling };
    }),
  };
}

const changedSinceRead = (error: unknown) => error instanceof ApiError && enforceIndexRefused(error.status, error.body);
