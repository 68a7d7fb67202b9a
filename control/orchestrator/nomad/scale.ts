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
 * Job.Scale changes the count alone, and Nomad refuses it while a deployment is active (a
 * rollout, or the last scale's) and for a count outside the group's Scaling Min/Max. When the
 * range must change too (`scalingAt`), or Nomad refuses, the driver does what Job.Scale
 * does: it registers the job as Nomad holds it with the new count and range, only if
 * nothing changed the job since it was read (EnforceIndex, as Job.Scale's own commit),
 * reading it again when something did. Never the spec this copy of the control API holds:
 * the other copy may have deployed a newer version since, which that would roll back; and a
 * scale leaves the secrets alone. The registration supersedes an active deployment (Nomad
 * cancels it) and the rollout goes on at the new count. A job Nomad does not run (gone, or
 * stopped) is registered whole by `register`.
 */
export async function scaleJob(jobs: JobsApi, spec: JobSpec, register: () => Promise<unknown>): Promise<'scaled' | 'resubmitted' | 'registered'> {
  for (let attempt = 1; ; attempt += 1) {
    const job = await jobs.read(jobId(spec.agentId));
    if (!job || job.Stop) {
      await register();
      return 'registered';
    }
    if (attempt === 1 && rangeKept(job, spec.count)) {
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

type Scaling = NonNullable<NomadJobRead['TaskGroups'][number]['Scaling']>;

/**
 * The group's Scaling range at `count`: stretched to hold it (Nomad refuses a count outside
 * it, and job-spec.ts widens it the same way), and a minimum of at least 1 whenever
 * replicas run. Parking widens the minimum to 0; left there after a wake, the Nomad
 * Autoscaler could take the agent to 0 itself, which nothing but a request would undo: a
 * running handler reads the job's scaling events only when it is created
 * (nomad-autoscaler policy/handler.go, `NewPolicyHandler`, `checkForOutOfBandEvents`), and
 * target-value's count is held only to the policy's Min (policy/check.go,
 * `runCheckAndCapCount`). The job's own minimum is max(min_replicas, 1) and min_replicas is
 * 0 only for agents that scale to zero, so 1 is that minimum again.
 */
function scalingAt(scaling: Scaling, count: number): Scaling {
  const min = count === 0 ? 0 : Math.max(1, Math.min(scaling.Min ?? count, count));
  return { ...scaling, Min: min, Max: Math.max(scaling.Max, count) };
}

const agentGroup = (job: NomadJobRead) => job.TaskGroups.find((group) => group.Name === GROUP);

/** Whether the group's Scaling range stays as it is at `count`, so that Job.Scale, which changes only the count, will do. */
function rangeKept(job: NomadJobRead, count: number): boolean {
  const scaling = agentGroup(job)?.Scaling;
  if (!scaling) return true;
  const wanted = scalingAt(scaling, count);
  return wanted.Min === (scaling.Min ?? 0) && wanted.Max === scaling.Max;
}

/** The job with the agent group at `count` and its Scaling range for it. */
function withCount(job: NomadJobRead, count: number): NomadJobRead {
  return {
    ...job,
    TaskGroups: job.TaskGroups.map((group) => {
      if (group.Name !== GROUP) return group;
      return { ...group, Count: count, Scaling: group.Scaling ? scalingAt(group.Scaling, count) : group.Scaling };
    }),
  };
}

const changedSinceRead = (error: unknown) => error instanceof ApiError && enforceIndexRefused(error.status, error.body);
