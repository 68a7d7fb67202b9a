import { apiJobToStruct, regionForJob, type RequestScope } from './canonicalize.js';
import { goQuote } from './go-format.js';
import { jobValidateHook } from './job.js';
import { MultiError } from './multierror.js';
import { serverMutate } from './server-mutate.js';

/**
 * `PUT /v1/jobs` as Nomad answers it, after the fake's field check (schema.ts):
 *
 * 1. the HTTP agent's own checks, each a 400 (command/agent/job_endpoint.go, `jobUpdate`);
 * 2. defaults and conversion (canonicalize.ts), forwarding to the job's region;
 * 3. the server's mutators (server-mutate.ts), then its admission validators, whose
 *    errors are gathered in one multierror (nomad/job_endpoint_hooks.go,
 *    `admissionValidators`), then `EnforceIndex` and `validateJobUpdate`
 *    (nomad/job_endpoint.go, `doRegister`).
 *
 * The server's errors are plain Go errors, not `NewErrRPCCoded`, so the HTTP agent
 * answers them with 500 and the error's text (command/agent/http.go, `wrap`): a job Nomad
 * refuses is a 500, not a 400.
 */
type Json = Record<string, any>;

/** What the fake cluster knows that the checks read. */
export interface ClusterFacts {
  region: string;
  namespaces: ReadonlySet<string>;
  nodePools: ReadonlySet<string>;
}

export interface Refusal {
  status: number;
  message: string;
}

/** A job registered before, as far as `doRegister` looks at it. */
export interface ExistingJob {
  Type: string;
  JobModifyIndex: number;
}

export function admitJobRegistration(body: Json, query: URLSearchParams, facts: ClusterFacts, existing: ExistingJob | undefined): Refusal | { job: Json } {
  const httpRefusal = agentChecks(body);
  if (httpRefusal) return { status: 400, message: httpRefusal };
  const scope: RequestScope = {
    queryNamespace: query.get('namespace') ?? '', bodyNamespace: body.Namespace ?? '',
    queryRegion: query.get('region') ?? '', bodyRegion: body.Region ?? '', agentRegion: facts.region,
  };
  // nomad/rpc.go, `forward` → `findRegionServer`: a region this cluster is not.
  if (regionForJob(body.Job, scope)[0] !== facts.region) return { status: 500, message: 'No path to region' };
  const job = serverMutate(apiJobToStruct(body.Job, scope));
  const invalid = admissionValidators(job, facts);
  if (invalid) return { status: 500, message: invalid.toString() };
  const refused = (body.EnforceIndex ? enforceIndexError(existing, body.JobModifyIndex ?? 0) : null) ?? jobUpdateError(existing, job);
  return refused ? { status: 500, message: refused } : { job };
}

/** command/agent/job_endpoint.go, `jobUpdate`, before anything reaches the server. */
function agentChecks(body: Json): string | null {
  if (!body.Job) return 'Job must be specified';
  if (body.Job.ID === undefined || body.Job.ID === null) return "Job ID hasn't been provided";
  // GH-8481: a system job runs one allocation per node and cannot scale.
  if (body.Job.Type === 'system' && (body.Job.TaskGroups ?? []).some((tg: Json) => tg.Scaling)) {
    return 'Task groups with job type system do not support scaling blocks';
  }
  // `validateEvalPriorityOpt`.
  if (body.EvalPriority && (body.EvalPriority < 1 || body.EvalPriority > 100)) return 'Eval priority must be between 1 and 100 inclusively';
  return null;
}

/**
 * nomad/job_endpoint_hooks.go, `admissionValidators`, in the order of `NewJobEndpoints`
 * for the hooks that can refuse what the fake's schema accepts:
 * `jobNamespaceConstraintCheckHook` (nomad/job_endpoint_validators.go; the fake's
 * namespaces restrict no driver or network mode), `jobNodePoolValidatingHook`
 * (nomad/job_endpoint_hook_node_pool.go; the CE `enterpriseValidation` adds nothing, so
 * any job type may use the built-in pool "all") and `jobValidate`.
 */
function admissionValidators(job: Json, facts: ClusterFacts): MultiError | null {
  const errors = new MultiError();
  if (!facts.namespaces.has(job.Namespace)) errors.append(`job ${goQuote(job.ID)} is in nonexistent namespace ${goQuote(job.Namespace)}`);
  if (!facts.nodePools.has(job.NodePool)) errors.append(`job ${goQuote(job.ID)} is in nonexistent node pool ${goQuote(job.NodePool)}`);
  errors.append(jobValidateHook(job));
  return errors.orNil();
}

/** nomad/structs/job.go, `Job.EnforceIndex` (`RegisterEnforceIndexErrPrefix`). */
function enforceIndexError(existing: ExistingJob | undefined, index: number): string | null {
  const prefix = 'Enforcing job modify index';
  if (existing && index === 0) return `${prefix} 0: job already exists`;
  if (existing && index !== existing.JobModifyIndex) return `${prefix} ${index}: job exists with conflicting job modify index: ${existing.JobModifyIndex}`;
  if (!existing && index !== 0) return `${prefix} ${index}: job does not exist`;
  return null;
}

/** nomad/job_endpoint.go, `validateJobUpdate`: a job keeps its type. */
function jobUpdateError(existing: ExistingJob | undefined, job: Json): string | null {
  if (existing && existing.Type !== job.Type) return `cannot update job from type ${goQuote(existing.Type)} to ${goQuote(job.Type)}`;
  return null;
}
