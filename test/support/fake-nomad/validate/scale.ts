import { apiJobToStruct } from './canonicalize.js';
import { goQuote } from './go-format.js';
import { SERVER_LIMITS } from './job.js';
import type { Refusal } from './register.js';
import { serverMutate } from './server-mutate.js';

/**
 * `POST /v1/job/:id/scale` as Nomad answers it: the HTTP agent's check
 * (command/agent/job_endpoint.go, `jobScaleAction`), the request's own
 * (nomad/structs/structs.go, `JobScaleRequest.Validate`), then the server's against the
 * registered job (nomad/job_endpoint.go, `Job.Scale`). Most are `NewErrRPCCoded(400)`;
 * the job_max_count and modify-index errors are plain, so 500.
 */
type Json = Record<string, any>;

export interface ScaleTarget {
  /** The job as registered (api JSON), with its modify index. */
  job: Json;
  jobModifyIndex: number;
  /** A deployment of this job version is running (structs `Deployment.Active`). */
  deploymentActive: boolean;
}

/** The refusal, or the count to apply (null: Nomad only records the scaling event). */
export function admitScale(body: Json, jobId: string, query: URLSearchParams, target: ScaleTarget | undefined): Refusal | { count: number | null } {
  const payloadTarget: Json = body.Target ?? {};
  if (payloadTarget.Job && payloadTarget.Job !== jobId) return { status: 400, message: 'job ID in payload did not match URL' };
  const invalid = requestError(body, query.get('namespace') || 'default');
  if (invalid) return invalid;
  if (!target) return { status: 404, message: `job ${goQuote(jobId)} not found` };
  const count: number | null = body.Count ?? null;
  // The stored job as the server holds it: defaults filled, so a scaling block has its Min.
  const job = serverMutate(apiJobToStruct(target.job, { queryNamespace: '', bodyNamespace: '', queryRegion: '', bodyRegion: '', agentRegion: 'global' }));
  if (job.Type === 'system' && count !== null && count > 1) return { status: 400, message: 'jobs of type "system" can only be scaled between 0 and 1' };
  const group = job.TaskGroups.find((tg: Json) => tg.Name === payloadTarget.Group);
  if (!group) return { status: 400, message: `task group ${goQuote(payloadTarget.Group)} specified for scaling does not exist in job` };
  if (count === null) return { count };
  return countError(job, group, count, body.JobModifyIndex ?? 0, target) ?? { count };
}

/** nomad/structs/structs.go, `JobScaleRequest.Validate`. */
function requestError(body: Json, namespace: string): Refusal | null {
  const target: Json = body.Target ?? {};
  if (target.Namespace && target.Namespace !== namespace) return { status: 400, message: 'namespace in payload did not match header' };
  if (!target.Group) return { status: 400, message: 'missing task group name for scaling action' };
  if (body.Count !== undefined && body.Count !== null) {
    if (body.Count < 0) return { status: 400, message: "scaling action count can't be negative" };
    if (body.Error) return { status: 400, message: 'scaling action should not contain count if error is true' };
  }
  return null;
}

/** nomad/job_endpoint.go, `Job.Scale`, for a count-based scaling event. */
function countError(job: Json, group: Json, count: number, jobModifyIndex: number, target: ScaleTarget): Refusal | null {
  if (group.Scaling && count < group.Scaling.Min) {
    return { status: 400, message: `group count was less than scaling policy minimum: ${count} < ${group.Scaling.Min}` };
  }
  if (group.Scaling && group.Scaling.Max < count) {
    return { status: 400, message: `group count was greater than scaling policy maximum: ${count} > ${group.Scaling.Max}` };
  }
  const total = job.TaskGroups.reduce((sum: number, tg: Json) => sum + tg.Count, 0) - group.Count + count;
  if (total > SERVER_LIMITS.jobMaxCount) return { status: 500, message: `total count was greater than configured job_max_count: ${total} > ${SERVER_LIMITS.jobMaxCount}` };
  if (target.deploymentActive) return { status: 400, message: 'job scaling blocked due to active deployment' };
  if (jobModifyIndex > 0 && jobModifyIndex !== target.jobModifyIndex) {
    return { status: 500, message: `Enforcing job modify index ${jobModifyIndex}: job exists with conflicting job modify index: ${target.jobModifyIndex}` };
  }
  return null;
}
