import type { AllocResourceUsage, DeploymentPromoteRequest, DeploymentUpdateResponse, JobListStub, NomadDeployment, JobRegisterRequest, JobRegisterResponse, NomadJob, NomadJobRead, NomadJobVersions, ScalingRequest } from './api-types.js';
import type { ApiClient } from './http-client.js';
import { GROUP } from './job-spec.js';
import { withoutServerConstraints } from './server-constraints.js';

/** The Nomad job endpoints the driver uses, in one namespace (and region, when set). */
export class JobsApi {
  constructor(private readonly nomad: ApiClient, private readonly namespace: string, private readonly region: string | null) {}

  private get scope() {
    return { namespace: this.namespace, region: this.region ?? undefined };
  }

  register(job: NomadJob, preserveCounts: boolean): Promise<JobRegisterResponse> {
    const request: JobRegisterRequest = { Job: job, PreserveCounts: preserveCounts };
    return this.nomad.json('PUT', '/v1/jobs', { query: this.scope, body: request });
  }

  /**
   * Registers a job as `read` gave it, changed by the caller, only if nothing registered or
   * scaled it since that read (EnforceIndex on its JobModifyIndex), as Job.Scale commits its
   * copy of the job; otherwise Nomad answers 500 "Enforcing job modify index …". What the
   * server added to the job when it stored it goes first, as it adds that again.
   */
  registerOver(job: NomadJobRead): Promise<JobRegisterResponse> {
    const request: JobRegisterRequest = { Job: withoutServerConstraints(job), PreserveCounts: false, EnforceIndex: true, JobModifyIndex: job.JobModifyIndex ?? 0 };
    return this.nomad.json('PUT', '/v1/jobs', { query: this.scope, body: request });
  }

  read(jobId: string): Promise<NomadJobRead | null> {
    return this.nomad.json('GET', `/v1/job/${encodeURIComponent(jobId)}`, { query: this.scope, allowNotFound: true });
  }

  /** The versions of the job Nomad still tracks (JobTrackedVersions, 6 by default); none when it is gone. */
  async versions(jobId: string): Promise<NomadJobRead[]> {
    const answer = await this.nomad.json<NomadJobVersions | null>('GET', `/v1/job/${encodeURIComponent(jobId)}/versions`, { query: this.scope, allowNotFound: true });
    return answer?.Versions ?? [];
  }

  /** The job's latest deployment, or null (command/agent/job_endpoint.go, `jobLatestDeployment`). */
  latestDeployment(jobId: string): Promise<NomadDeployment | null> {
    return this.nomad.json<NomadDeployment | null>('GET', `/v1/job/${encodeURIComponent(jobId)}/deployment`, { query: this.scope, allowNotFound: true });
  }

  /**
   * Promotes every group's canaries (nomad/state/state_store.go, `UpdateDeploymentPromotion`):
   * Nomad refuses while a group has fewer healthy canaries than it asked for, or once the
   * deployment is terminal.
   */
  promote(deploymentId: string): Promise<DeploymentUpdateResponse> {
    const request: DeploymentPromoteRequest = { DeploymentID: deploymentId, All: true };
    return this.nomad.json('POST', `/v1/deployment/promote/${encodeURIComponent(deploymentId)}`, { query: this.scope, body: request });
  }

  /**
   * Marks a deployment failed: its unpromoted canaries stop, and with auto_revert the job
   * goes back to its latest stable version in the same update
   * (nomad/deploymentwatcher/deployment_watcher.go, `FailDeployment`).
   */
  fail(deploymentId: string): Promise<DeploymentUpdateResponse> {
    return this.nomad.json('POST', `/v1/deployment/fail/${encodeURIComponent(deploymentId)}`, { query: this.scope });
  }

  async list(prefix: string): Promise<JobListStub[]> {
    return (await this.nomad.json<JobListStub[] | null>('GET', '/v1/jobs', { query: { ...this.scope, prefix } })) ?? [];
  }

  scale(jobId: string, count: number, message: string): Promise<unknown> {
    const request: ScalingRequest = { Count: count, Target: { Job: jobId, Group: GROUP }, Message: message, PolicyOverride: false };
    return this.nomad.json('POST', `/v1/job/${encodeURIComponent(jobId)}/scale`, { query: this.scope, body: request });
  }

  /** Stops the job and purges it, so nothing of it stays in Nomad's state (and its id can be reused). */
  deregister(jobId: string): Promise<unknown> {
    return this.nomad.json('DELETE', `/v1/job/${encodeURIComponent(jobId)}`, { query: { ...this.scope, purge: true }, allowNotFound: true });
  }

  stats(allocationId: string): Promise<AllocResourceUsage> {
    return this.nomad.json('GET', `/v1/client/allocation/${encodeURIComponent(allocationId)}/stats`, { query: this.scope });
  }
}
