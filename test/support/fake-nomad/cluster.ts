import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../scripts/lib/local-services.js';
import { createImage, pullFailure } from './docker-image.js';
import { createTask, imagePresent, removeLabelled, removeTask, startTask, taskState } from './task-runner.js';
import { LogFiles } from './log-files.js';
import { renderTaskTemplates } from './templates.js';
import { authFromTaskConfig, interpolateDriverConfig, resolveTaskSecrets, type DockerRegistryAuth } from './secrets.js';
import { tasksUpdated } from './tasks-updated.js';
import { MultiError } from './validate/multierror.js';
import { FakeKeyring, workloadIdentityClaims } from './identities.js';
import { interpolateTaskEnv, SECRETS_MOUNT, TaskIdentityFiles, taskVariables } from './task-identities.js';

/**
 * The state of a fake Nomad region with one client node and its Consul catalog. Jobs are
 * played as Nomad plays them, on real containers: allocations per group count, task
 * states and events (only the last 10 kept), restarts per RestartPolicy, every change of
 * the job (a registration or a scale) a new version whose allocations are updated in place
 * or replaced as the scheduler decides, deployments that succeed when their allocations are
 * healthy, scale refused while one runs, and images got as the docker driver gets them
 * (docker-image.ts: one tagged "latest" is always pulled, and only `registry` serves pulls),
 * and canaries: an update block's `canary` places that many allocations of a changed job
 * beside the old ones, which keep running until the deployment is promoted or failed
 * (`promote`, `fail`, with auto_revert's rollback to the latest stable version).
 *
 * Simplified, on purpose (tests wait for conditions, never for these timings): checks run
 * every 300 ms whatever their Interval; MinHealthyTime is waited at most
 * `minHealthyTimeCapMs` (500 ms unless a test needs a deployment seen running);
 * MaxParallel is not applied (a new version's allocations start together, old ones stop
 * once all new ones are healthy); HealthyDeadline is not applied;
 * a failed allocation is not rescheduled (the driver's ReschedulePolicy has Attempts 0);
 * a deployment the fake fails on its own (an allocation failed) is not auto-reverted: only
 * a failure asked through `fail` is.
 */
type Json = Record<string, any>;

const nanos = (ms = Date.now()) => ms * 1_000_000;
/** A service job's restart policy when the group sets none (nomad/structs/structs.go, `DefaultServiceJobRestartPolicy`). */
const DEFAULT_RESTART_POLICY = { Attempts: 2, Interval: 30 * 60e9, Delay: 15e9, Mode: 'fail' };
const LIVE = new Set(['pending', 'running']);

/** A deployment as /v1/job/:id/deployment shows it (nomad/structs/deployment.go, `Deployment`), the parts the fake plays. */
export interface Deployment {
  ID: string;
  JobVersion: number;
  /** `running` is the only one of Deployment.Active's statuses the fake reaches. */
  Status: 'running' | 'successful' | 'failed' | 'cancelled';
  StatusDescription: string;
  TaskGroups: Record<string, DeploymentState>;
}

/** Per group in a deployment (nomad/structs/deployment.go, `DeploymentState`), the fields the fake plays. */
export interface DeploymentState {
  /** How many allocations it needs healthy. */
  DesiredTotal: number;
  /** The update block's Canary when the group had destructive changes (reconcile_cluster.go, `computeCanaries`), else 0. */
  DesiredCanaries: number;
  /** Canary allocations placed for it, by id. */
  PlacedCanaries: string[];
  Promoted: boolean;
  AutoRevert: boolean;
  AutoPromote: boolean;
}

/** nomad/structs/deployment.go, `Deployment.RequiresPromotion`. */
export const requiresPromotion = (deployment: Deployment | null): boolean =>
  deployment?.Status === 'running' && Object.values(deployment.TaskGroups).some((group) => group.DesiredCanaries > 0 && !group.Promoted);

export interface StoredJob {
  job: Json;
  version: number;
  modifyIndex: number;
  /** Every version written, oldest first, with its Version and JobModifyIndex: /v1/job/:id/versions, and the job each allocation runs. */
  history: Json[];
  /** The latest deployment of the job (what `LatestDeploymentByJobID` finds), of this version or an older one. */
  deployment: Deployment | null;
}

interface Allocation {
  public: Json;
  container: string;
  hostPort: number;
  healthy: boolean;
  stopRequested: boolean;
  /** Played without a container (FakeClusterOptions.simulate): running and healthy at once. */
  simulated: boolean;
  /** The client's health watcher waiting out MinHealthyTime before it marks the allocation healthy for its deployment. */
  healthTimer?: NodeJS.Timeout;
  /** Its task's identity files, kept fresh while the task lives (task-identities.ts). */
  identityFiles?: TaskIdentityFiles;
}

export class FakeNomadState {
  index = 1;
  /** Raft index of the last change to the allocations table (what /v1/allocations blocks on). */
  allocsIndex = 1;
  /** Consul's index of the last change to any agent check (what /v1/health/state blocks on). */
  checksIndex = 1;
  readonly jobs = new Map<string, StoredJob>();
  readonly variables = new Map<string, Json>();
  /** Each allocation's alloc/logs files, which GET /v1/client/fs/logs reads (fs-logs.ts). */
  readonly logs = new LogFiles();
  /** Node pools that exist: Nomad's built-in "default" and "all", plus the test's. */
  readonly nodePools = new Set(['default', 'all']);
  /** Namespaces that exist: Nomad's built-in "default", plus the test's. */
  readonly namespaces = new Set(['default']);
  /** Image references a registry the client reaches serves: none unless the test says (the workplace reaches none). */
  readonly registry = new Set<string>();
  /** Per allocation, the registry credentials its docker driver would pull with (secrets.ts, `authFromTaskConfig`). */
  readonly registryAuths = new Map<string, DockerRegistryAuth | null>();
  /** The root keys workload identities are signed with (identities.ts); RS256 unless the test asks for a keyring from before Nomad 1.7. */
  keyring = new FakeKeyring();
  /** The servers' `oidc_issuer`: the `iss` of every identity, none when unset (nomad/encrypter.go, `SignClaims`). */
  issuer: string | undefined;
  private readonly allocs = new Map<string, Allocation>();
  /** The client node's serfHealth in Consul: critical once its agent stops answering gossip. */
  private nodeAlive = true;
  /** Name indexes being placed (a placement waits for a free port), per job, group and version: counted as placed. */
  private readonly placing = new Map<string, Set<number>>();
  private readonly consulIndex = new Map<string, number>();
  private readonly consulWaiters = new Set<() => void>();
  private readonly allocWaiters = new Set<() => void>();
  private readonly checker: NodeJS.Timeout;
  private closed = false;

  constructor(readonly label: string, private readonly simulate = false, private readonly minHealthyTimeCapMs = 500) {
    this.checker = setInterval(() => void this.runChecks(), 300);
  }

  bump(): number {
    this.index += 1;
    return this.index;
  }

  allAllocations(): Json[] {
    return [...this.allocs.values()].map((a) => structuredClone(a.public));
  }

  allocationsOf(jobId: string): Json[] {
    return [...this.allocs.values()].filter((a) => a.public.JobID === jobId).map((a) => structuredClone(a.public));
  }

  allocation(id: string): Json | undefined {
    const found = this.allocs.get(id);
    return found ? structuredClone(found.public) : undefined;
  }

  register(job: Json, preserveCounts: boolean): StoredJob {
    const previous = this.jobs.get(job.ID);
    // nomad/job_endpoint.go, `Job.Register`: a job whose spec did not change
    // (structs.Job.SpecChanged, which ignores status, version and indexes; PreserveCounts is
    // applied later, in the state store) is not written again: same version, no new
    // deployment, only an evaluation. Otherwise nomad/state/state_store.go, `upsertJobImpl`,
    // sets the version to the existing one + 1.
    if (previous && !specChanged(previous.job, job)) {
      this.reconcile(job.ID);
      return previous;
    }
    if (previous && preserveCounts) {
      for (const group of job.TaskGroups ?? []) {
        const old = (previous.job.TaskGroups ?? []).find((g: Json) => g.Name === group.Name);
        if (old) group.Count = old.Count;
      }
    }
    return this.commit(previous, { ...job, Stop: false, Status: 'running' });
  }

  /**
   * A scale validate/scale.ts admitted. nomad/job_endpoint.go, `Job.Scale`, sets the group's
   * count and SubmitTime on a copy of the job and commits it through
   * `raftApply(structs.JobRegisterRequestType, …)`, as a registration: a new version, then
   * an evaluation (`commit`).
   */
  scale(jobId: string, group: string, count: number): StoredJob {
    const stored = this.jobs.get(jobId)!;
    const job = structuredClone(stored.job);
    (job.TaskGroups as Json[]).find((g) => g.Name === group)!.Count = count;
    job.SubmitTime = nanos();
    return this.commit(stored, job);
  }

  /**
   * Writes a changed job as nomad/state/state_store.go, `upsertJobImpl`, does (keepVersion
   * is false for registrations and scales alike): the existing version + 1, a new
   * JobModifyIndex, a row of the version history. Then the scheduler's evaluation: an active
   * deployment of an older version is cancelled (scheduler/reconciler/reconcile_cluster.go,
   * `cancelUnneededServiceDeployments`), the allocations are updated (`evaluate`) and placed.
   */
  private commit(previous: StoredJob | undefined, job: Json): StoredJob {
    const version = previous ? previous.version + 1 : 0;
    const modifyIndex = this.bump();
    const written = { ...job, Version: version, JobModifyIndex: modifyIndex };
    const stored: StoredJob = {
      job: written,
      version,
      modifyIndex,
      history: [...(previous?.history ?? []), structuredClone({ ...written, ModifyIndex: modifyIndex })],
      deployment: previous?.deployment ?? null,
    };
    if (stored.deployment?.Status === 'running') this.endDeployment(stored.deployment, 'cancelled', 'Cancelled due to newer version of job');
    this.jobs.set(job.ID, stored);
    this.evaluate(stored);
    this.reconcile(job.ID);
    return stored;
  }

  /**
   * The scheduler's first evaluation of a new version, per group
   * (scheduler/reconciler/reconcile_cluster.go, `AllocReconciler.computeGroup`): a group at
   * count 0 stops everything and has no deployment state; otherwise the surplus stops first
   * (`computeStop`: the highest name indexes), then each allocation left moves to the new
   * version in place unless its tasks changed (`computeUpdates` with scheduler/util.go,
   * `genericAllocUpdateFn` and `tasksUpdated`; a count change changes no task). A deployment
   * is created when a group has an update block and the desired total is above 0
   * (`createDeployment`: nothing runs the new version yet, so `hadRunning` is false). The
   * in-place allocations join it with their deployment health cleared
   * (scheduler/generic_sched.go, `computeJobAllocs`), so it waits for them to be healthy again.
   */
  private evaluate(stored: StoredJob): void {
    // cancelUnneededCanaries: the canaries of the deployment this version replaces stop,
    // unless they were promoted (the previous deployment is still in `stored.deployment`).
    this.stopUnpromotedCanaries(stored.deployment);
    const promotedCanaries = new Set(Object.values(stored.deployment?.TaskGroups ?? {}).filter((state) => state.Promoted).flatMap((state) => state.PlacedCanaries));
    const inPlace: Allocation[] = [];
    const surplus: Allocation[] = [];
    const groups: Deployment['TaskGroups'] = {};
    for (const group of stored.job.TaskGroups as Json[]) {
      const live = [...this.allocs.values()]
        .filter((a) => a.public.JobID === stored.job.ID && a.public.TaskGroup === group.Name && a.public.DesiredStatus === 'run' && LIVE.has(a.public.ClientStatus))
        .sort((a, b) => nameIndex(b) - nameIndex(a));
      const stopping = surplusOf(live, group.Count, promotedCanaries);
      surplus.push(...stopping);
      live.splice(0, live.length, ...live.filter((alloc) => !stopping.includes(alloc)));
      if (group.Count === 0) continue;
      let destructive = 0;
      for (const alloc of live) {
        const runs = stored.history.find((job) => job.Version === alloc.public.JobVersion);
        if (runs && tasksUpdated(stored.job, runs, group.Name) === null) inPlace.push(alloc);
        else destructive += 1;
      }
      const update = group.Update ?? stored.job.Update;
      // structs.UpdateStrategy.IsEmpty: no block, or MaxParallel 0 (the job's block is merged into each group's).
      if ((update?.MaxParallel ?? 0) > 0) {
        groups[group.Name] = {
          DesiredTotal: group.Count,
          // requiresCanaries: destructive updates and an update block asking for canaries.
          DesiredCanaries: destructive > 0 ? (update.Canary ?? 0) : 0,
          PlacedCanaries: [],
          Promoted: false,
          AutoRevert: update.AutoRevert === true,
          AutoPromote: update.AutoPromote === true,
        };
      }
    }
    if (Object.keys(groups).length > 0) {
      const deployment: Deployment = { ID: randomUUID(), JobVersion: stored.version, Status: 'running', StatusDescription: 'Deployment is running', TaskGroups: groups };
      // nomad/structs/deployment.go, NewDeployment and the reconciler's description for a deployment that waits to be promoted.
      if (requiresPromotion(deployment)) {
        const auto = Object.values(groups).every((g) => g.DesiredCanaries === 0 || g.AutoPromote);
        deployment.StatusDescription = auto ? 'Deployment is running pending automatic promotion' : 'Deployment is running but requires manual promotion';
      }
      stored.deployment = deployment;
    }
    const deploymentId = stored.deployment?.JobVersion === stored.version ? stored.deployment.ID : '';
    // In place first: stopping an allocation reconciles, which must see them at the new version.
    for (const alloc of inPlace) this.updateInPlace(alloc, stored.version, deploymentId);
    for (const alloc of surplus) this.stop(alloc);
  }

  /**
   * scheduler/reconciler/reconcile_cluster.go, `cancelUnneededCanaries`: the canaries of an
   * older deployment, or of a failed one, stop unless their group was promoted.
   */
  private stopUnpromotedCanaries(deployment: Deployment | null): void {
    if (!deployment) return;
    for (const state of Object.values(deployment.TaskGroups)) {
      if (state.Promoted) continue;
      for (const id of state.PlacedCanaries) {
        const alloc = this.allocs.get(id);
        if (alloc) this.stop(alloc);
      }
    }
  }

  /**
   * POST /v1/deployment/promote/:id. nomad/deployment_endpoint.go, `Deployment.Promote`
   * (the deployment exists and is active), then nomad/state/state_store.go,
   * `UpdateDeploymentPromotion`: every group promoted needs its DesiredCanaries of healthy,
   * live canaries; then the groups are Promoted, the canaries lose their Canary flag, and
   * the scheduler goes on with the rolling update. An error is Nomad's message (HTTP 500).
   */
  promote(deploymentId: string, all: boolean, groups: string[]): { error: string } | { index: number } {
    const stored = [...this.jobs.values()].find((job) => job.deployment?.ID === deploymentId);
    const deployment = stored?.deployment;
    if (!stored || !deployment) return { error: 'deployment not found' };
    if (deployment.Status !== 'running') return { error: "can't promote terminal deployment" };
    const promoted = (group: string) => all || groups.includes(group);
    const healthy = new Map<string, Allocation[]>();
    for (const [group, state] of Object.entries(deployment.TaskGroups)) {
      if (!promoted(group)) continue;
      healthy.set(group, state.PlacedCanaries.map((id) => this.allocs.get(id)).filter((a): a is Allocation => !!a && a.public.DesiredStatus === 'run' && LIVE.has(a.public.ClientStatus) && deploymentHealthy(a)));
    }
    const unhealthy = Object.entries(deployment.TaskGroups)
      .filter(([group, state]) => promoted(group) && state.DesiredCanaries > 0 && healthy.get(group)!.length < state.DesiredCanaries)
      .map(([group, state]) => `Task group "${group}" has ${healthy.get(group)!.length}/${state.DesiredCanaries} healthy allocations`);
    if (unhealthy.length > 0) return { error: String(unhealthy.reduce((errors, error) => errors.append(error), new MultiError())) };
    for (const [group, state] of Object.entries(deployment.TaskGroups)) if (promoted(group)) state.Promoted = true;
    if (!requiresPromotion(deployment)) deployment.StatusDescription = 'Deployment is running';
    for (const alloc of [...healthy.values()].flat()) {
      alloc.public.DeploymentStatus = { ...alloc.public.DeploymentStatus, Canary: false, ModifyIndex: this.bump() };
      this.touch(alloc);
    }
    this.consulChanged();
    const index = this.bump();
    this.reconcile(stored.job.ID);
    return { index };
  }

  /**
   * POST /v1/deployment/fail/:id. nomad/deployment_endpoint.go, `Deployment.Fail` (exists,
   * active), then nomad/deploymentwatcher/deployment_watcher.go, `FailDeployment`: failed
   * "Deployment marked as failed"; when a group has auto_revert, the latest stable version
   * (`latestStableJob`) is registered again in the same update, unless its spec is the
   * current one's (`handleRollbackValidity`). The failed deployment's unpromoted canaries
   * stop (`stopUnpromotedCanaries`).
   */
  fail(deploymentId: string): { error: string } | { index: number; revertedJobVersion: number | null } {
    const stored = [...this.jobs.values()].find((job) => job.deployment?.ID === deploymentId);
    const deployment = stored?.deployment;
    if (!stored || !deployment) return { error: 'deployment not found' };
    if (deployment.Status !== 'running') return { error: "can't fail terminal deployment" };
    let description = 'Deployment marked as failed';
    let rollback: Json | null = null;
    if (Object.values(deployment.TaskGroups).some((group) => group.AutoRevert)) {
      // JobVersionsByID: the highest version first.
      const stable = [...stored.history].reverse().find((job) => job.Stable === true) ?? null;
      if (!stable) description += ' - no stable job version to auto revert to';
      else if (specChanged(stored.job, stable)) {
        description += ` - rolling back to job version ${stable.Version}`;
        rollback = stable;
      } else description += ` - not rolling back to stable job version ${stable.Version} as current job has same specification`;
    }
    this.endDeployment(deployment, 'failed', description);
    if (rollback) {
      const { Version: _v, JobModifyIndex: _j, ModifyIndex: _m, ...job } = structuredClone(rollback);
      this.commit(stored, { ...job, Stable: false, Stop: false, Status: 'running' });
    } else {
      this.stopUnpromotedCanaries(deployment);
      this.reconcile(stored.job.ID);
    }
    return { index: this.index, revertedJobVersion: rollback ? this.jobs.get(stored.job.ID)!.version : null };
  }

  /**
   * The allocation runs the new version without a restart. A new deployment clears its
   * health, and the client's health hook watches it again from the start
   * (client/allocrunner/health_hook.go, `Update`: ClearHealth, then `init`).
   */
  private updateInPlace(alloc: Allocation, version: number, deploymentId: string): void {
    alloc.public.JobVersion = version;
    if (alloc.public.DeploymentID !== deploymentId) {
      alloc.public.DeploymentID = deploymentId;
      alloc.public.DeploymentStatus = null;
      this.watchDeploymentHealth(alloc);
    }
    this.touch(alloc);
  }

  private endDeployment(deployment: Deployment, status: Deployment['Status'], description: string): void {
    deployment.Status = status;
    deployment.StatusDescription = description;
    this.bump();
  }

  deregister(jobId: string, purge: boolean): boolean {
    const stored = this.jobs.get(jobId);
    if (!stored) return false;
    // The job goes (or is marked stopped) first, so stopping its allocations places no replacement.
    if (purge) this.jobs.delete(jobId);
    else stored.job.Stop = true;
    // cancelUnneededServiceDeployments: a stopped job's active deployment is cancelled.
    if (stored.deployment?.Status === 'running') this.endDeployment(stored.deployment, 'cancelled', 'Cancelled because job is stopped');
    for (const alloc of this.allocs.values()) if (alloc.public.JobID === jobId) this.stop(alloc);
    this.bump();
    return true;
  }

  /** Places or stops allocations until the job's groups have their counts of the current version. */
  private reconcile(jobId: string): void {
    const stored = this.jobs.get(jobId);
    if (!stored || stored.job.Stop) return;
    for (const group of stored.job.TaskGroups as Json[]) {
      const canarying = this.canariesWanted(stored, group);
      if (canarying) {
        this.placeCanaries(stored, group, canarying);
        continue;
      }
      // A failed deployment with canaries: they stop (cancelUnneededCanaries), nothing is
      // placed (`deploymentPlaceReady` is false), and the old allocations keep running.
      const failed = stored.deployment?.JobVersion === stored.version && stored.deployment.Status === 'failed' ? stored.deployment.TaskGroups[group.Name] : undefined;
      if (failed && failed.DesiredCanaries > 0 && !failed.Promoted) {
        this.stopUnpromotedCanaries(stored.deployment);
        continue;
      }
      const mine = [...this.allocs.values()].filter((a) => a.public.JobID === jobId && a.public.TaskGroup === group.Name && a.public.DesiredStatus === 'run');
      const current = mine.filter((a) => a.public.JobVersion === stored.version);
      const old = mine.filter((a) => a.public.JobVersion !== stored.version);
      // A failed allocation keeps its slot: it is not rescheduled (see the class comment).
      const placing = this.placing.get(placingKey(stored, group)) ?? new Set<number>();
      const occupying = current.filter((a) => LIVE.has(a.public.ClientStatus) || a.public.ClientStatus === 'failed').length + placing.size;
      const taken = new Set([...mine.map(nameIndex), ...placing]);
      for (let i = occupying; i < group.Count; i += 1) void this.place(stored, group, freeIndex(taken));
      const live = current.filter((a) => LIVE.has(a.public.ClientStatus));
      for (const extra of live.slice(group.Count).reverse()) this.stop(extra);
      // Old allocations stop once the new ones are healthy for the deployment (after
      // MinHealthyTime, `watchDeploymentHealth`): there is always a healthy replica to route to.
      if (old.length > 0 && live.length >= group.Count && live.slice(0, group.Count).every(deploymentHealthy)) for (const a of old) this.stop(a);
      if (group.Count === 0) for (const a of old) this.stop(a);
    }
    this.settleDeployment(stored);
  }

  /**
   * The deployment state of a group of the current version that waits for promotion
   * (reconcile_cluster.go, `isCanarying`): nothing but its canaries is placed or stopped
   * then (`computeUnderProvisionedBy` is 0, and the old allocations keep running).
   */
  private canariesWanted(stored: StoredJob, group: Json): DeploymentState | null {
    const deployment = stored.deployment;
    if (!deployment || deployment.JobVersion !== stored.version || deployment.Status !== 'running') return null;
    const state = deployment.TaskGroups[group.Name];
    return state && state.DesiredCanaries > 0 && !state.Promoted ? state : null;
  }

  /**
   * `computeCanaries`: up to DesiredCanaries, a failed canary keeping its place (it is not
   * rescheduled, see the class comment). Named as allocation_name_index.go,
   * `NextCanaries`, names them: first the name indexes of the allocations being replaced
   * that no canary has yet, lowest first, so that promotion stops the old allocation of
   * each canary's name (`computeStop`, `surplusOf`); then any free index.
   */
  private placeCanaries(stored: StoredJob, group: Json, state: DeploymentState): void {
    const canaries = state.PlacedCanaries.map((id) => this.allocs.get(id)).filter((a): a is Allocation => !!a && a.public.DesiredStatus === 'run');
    const placing = this.placing.get(placingKey(stored, group)) ?? new Set<number>();
    const mine = [...this.allocs.values()].filter((a) => a.public.JobID === stored.job.ID && a.public.TaskGroup === group.Name && a.public.DesiredStatus === 'run');
    const canaryNames = new Set([...canaries.map(nameIndex), ...placing]);
    const replaced = [...new Set(mine.filter((a) => a.public.JobVersion !== stored.version).map(nameIndex))].filter((i) => i < group.Count && !canaryNames.has(i)).sort((a, b) => a - b);
    const taken = new Set([...mine.map(nameIndex), ...placing]);
    for (let i = canaries.length + placing.size; i < state.DesiredCanaries; i += 1) void this.place(stored, group, replaced.shift() ?? freeIndex(taken), state);
  }

  /**
   * nomad/deploymentwatcher/deployment_watcher.go, `shouldFail`, and reconcile_cluster.go,
   * `isDeploymentComplete`: successful once each group has its DesiredTotal of allocations
   * healthy for this deployment; failed here as soon as one of them fails (the driver's
   * allocations are not rescheduled, so the deadline would fail it anyway).
   */
  private settleDeployment(stored: StoredJob): void {
    const deployment = stored.deployment;
    if (!deployment || deployment.Status !== 'running' || deployment.JobVersion !== stored.version) return;
    const members = [...this.allocs.values()].filter((a) => a.public.DeploymentID === deployment.ID && a.public.DesiredStatus === 'run');
    const wanted = Object.values(deployment.TaskGroups).reduce((sum, g) => sum + g.DesiredTotal, 0);
    if (members.some((a) => a.public.ClientStatus === 'failed')) this.endDeployment(deployment, 'failed', 'Failed due to unhealthy allocations');
    else if (!requiresPromotion(deployment) && members.filter(deploymentHealthy).length >= wanted) {
      this.endDeployment(deployment, 'successful', 'Deployment completed successfully');
      // nomad/state/state_store.go, `updateDeploymentStatusImpl`: a successful deployment makes its job version stable.
      for (const version of stored.history) if (version.Version === deployment.JobVersion) version.Stable = true;
      if (stored.version === deployment.JobVersion) stored.job.Stable = true;
    }
  }

  /**
   * The client's health watcher (client/allocrunner/health_hook.go, `init`;
   * client/allochealth/tracker.go, `watchConsulEvents`): an allocation is healthy for its
   * deployment once its task runs and its checks have passed for the update block's
   * MinHealthyTime (the timer starts again when they fail); once set, health stays.
   */
  private watchDeploymentHealth(alloc: Allocation): void {
    clearTimeout(alloc.healthTimer);
    if (!alloc.healthy || alloc.public.DeploymentStatus?.Healthy !== undefined) return;
    const wait = Math.min((this.groupOf(alloc)?.Update?.MinHealthyTime ?? 0) / 1e6, this.minHealthyTimeCapMs);
    alloc.healthTimer = setTimeout(() => {
      if (this.closed || !alloc.healthy || alloc.public.DesiredStatus !== 'run') return;
      alloc.public.DeploymentStatus = { Healthy: true, Timestamp: new Date().toISOString(), Canary: alloc.public.DeploymentStatus?.Canary === true, ModifyIndex: this.bump() };
      this.touch(alloc);
      this.reconcile(alloc.public.JobID);
    }, wait);
    alloc.healthTimer.unref();
  }

  /** Places one allocation of the current version; with `canaryOf`, a canary of that deployment group (its DeploymentStatus says Canary from the start). */
  private async place(stored: StoredJob, group: Json, slot: number, canaryOf?: DeploymentState): Promise<void> {
    const task = group.Tasks[0] as Json;
    const port = (group.Networks?.[0]?.DynamicPorts ?? [])[0] as Json;
    const key = placingKey(stored, group);
    this.placing.set(key, (this.placing.get(key) ?? new Set()).add(slot));
    let hostPort: number;
    try {
      hostPort = await freePort();
    } finally {
      // In the same turn as the allocation is added below.
      this.placing.get(key)?.delete(slot);
    }
    const id = randomUUID();
    const alloc: Allocation = {
      container: `fake-nomad-${this.label}-${id.slice(0, 8)}`,
      hostPort,
      healthy: false,
      stopRequested: false,
      simulated: this.simulate,
      public: {
        ID: id, EvalID: randomUUID(), Name: `${stored.job.ID}.${group.Name}[${slot}]`, Namespace: stored.job.Namespace ?? 'default',
        NodeID: 'fake-node-0', NodeName: 'fake-client', JobID: stored.job.ID, JobType: stored.job.Type, JobVersion: stored.version,
        DeploymentID: stored.deployment?.Status === 'running' && stored.deployment.JobVersion === stored.version ? stored.deployment.ID : '',
        TaskGroup: group.Name, DesiredStatus: 'run', DesiredDescription: '', ClientStatus: 'pending', ClientDescription: 'No tasks have started',
        DeploymentStatus: canaryOf ? { Canary: true, ModifyIndex: this.index } : null, CreateIndex: this.bump(), ModifyIndex: this.index, CreateTime: nanos(), ModifyTime: nanos(),
        AllocatedResources: { Shared: { Ports: port ? [{ Label: port.Label, Value: hostPort, To: port.To, HostIP: '127.0.0.1' }] : [] } },
        TaskStates: { [task.Name]: { State: 'pending', Failed: false, Restarts: 0, LastRestart: null, StartedAt: null, FinishedAt: null, Events: [] } },
      },
    };
    this.allocs.set(id, alloc);
    canaryOf?.PlacedCanaries.push(id);
    this.event(alloc, task, { Type: 'Received', DisplayMessage: 'Task received by client' });
    if (alloc.simulated) {
      // Simulated allocations have no image store: every image counts as on the node, so
      // only one the driver must pull (tag "latest") can fail them, at once, without restarts.
      if (!this.obtainImage(alloc, task, true)) return this.notRestarting(alloc, task, group.RestartPolicy ?? DEFAULT_RESTART_POLICY);
      this.setRunning(alloc, task);
      return this.setHealth(alloc, true);
    }
    void this.runTask(stored, group, task, alloc, port?.To ?? 0).catch((error: Error) => {
      this.event(alloc, task, { Type: 'Driver Failure', DisplayMessage: error.message, DriverError: error.message, FailsTask: true });
      this.finish(alloc, task, 'failed');
    });
  }

  private async runTask(stored: StoredJob, group: Json, task: Json, alloc: Allocation, containerPort: number): Promise<void> {
    this.event(alloc, task, { Type: 'Task Setup', DisplayMessage: 'Building Task Directory' });
    // Templates rendered and read as Nomad does (consul-template and go-envparse, ported);
    // their env overrides the task's (client/taskenv/env.go, `Build`).
    const templates = await renderTaskTemplates(task, (path) => this.variables.get(path)?.Items, () => alloc.stopRequested);
    if ('stopped' in templates) return;
    if ('failure' in templates) {
      // template.go kills the task with an event that fails it: TaskKilling, SetFailsTask.
      this.event(alloc, task, { Type: 'Killing', DisplayMessage: templates.failure, FailsTask: true });
      return this.finish(alloc, task, 'failed');
    }
    // The secrets hook, then the driver config's interpolation (secrets.ts): a resolved
    // `auth` is what the docker driver would pull with, kept for tests in `registryAuths`.
    const secrets = await resolveTaskSecrets(task, (path) => this.variables.get(path)?.Items, () => alloc.stopRequested);
    if ('stopped' in secrets) return;
    const interpolated = 'failure' in secrets ? secrets : interpolateDriverConfig(task.Config ?? {}, secrets.values);
    if ('failure' in interpolated) {
      this.event(alloc, task, { Type: 'Failed Validation', DisplayMessage: interpolated.failure, ValidationError: interpolated.failure, FailsTask: true });
      return this.finish(alloc, task, 'failed');
    }
    this.registryAuths.set(alloc.public.ID, authFromTaskConfig(interpolated.config));
    // The identity hook runs before the task starts (identity_hook.go, `Prestart`).
    const identities = ((task.Identities ?? []) as Json[]).filter((identity) => identity.File);
    if (identities.length > 0 && !alloc.identityFiles) {
      const directory = join(this.taskDirectories, alloc.public.ID, String(task.Name), 'secrets');
      alloc.identityFiles = new TaskIdentityFiles(directory, (identity) => this.signIdentity(alloc.public, identity, new Date()));
      alloc.identityFiles.start(identities);
    }
    // Task env interpolated by the client, then the templates' env over it (client/taskenv/env.go, `Builder.Build`).
    const env: Record<string, string> = { ...interpolateTaskEnv(task.Env ?? {}, taskVariables(alloc.public, task)), ...templates.env };
    const policy = group.RestartPolicy ?? DEFAULT_RESTART_POLICY;
    const image = String(task.Config?.image ?? '');
    const state = task.Name as string;
    let created = false;
    for (;;) {
      if (alloc.stopRequested) return;
      let exitCode: number | null = null;
      if (this.obtainImage(alloc, task, await imagePresent(image))) {
        if (!created) {
          const mounts = alloc.identityFiles ? [{ source: alloc.identityFiles.directory, target: SECRETS_MOUNT }] : [];
          await createTask({ name: alloc.container, label: this.label, image, env, mounts, hostPort: alloc.hostPort, containerPort, config: task.Config ?? {}, memoryMb: task.Resources?.MemoryMB ?? 300 });
          created = true;
          // Stopped (or the fake closed) while the container was being created: it must not outlive the fake.
          if (alloc.stopRequested || this.closed) return void (await removeTask(alloc.container));
        }
        await startTask(alloc.container);
        this.setRunning(alloc, task);
        exitCode = await this.waitForExit(alloc);
        if (alloc.stopRequested) return;
        this.event(alloc, task, { Type: 'Terminated', DisplayMessage: `Exit Code: ${exitCode}`, ExitCode: exitCode });
      }
      const taskState = alloc.public.TaskStates[state];
      if (taskState.Restarts >= policy.Attempts) return this.notRestarting(alloc, task, policy);
      taskState.Restarts += 1;
      taskState.LastRestart = new Date().toISOString();
      taskState.State = 'pending';
      alloc.public.ClientStatus = 'pending';
      alloc.healthy = false;
      this.event(alloc, task, { Type: 'Restarting', DisplayMessage: `Task restarting in ${policy.Delay / 1e9}s`, RestartReason: 'Restart within policy' });
      await sleep(policy.Delay / 1e6);
    }
  }

  /**
   * The docker driver's image step (docker-image.ts): "Downloading image" when it pulls (the
   * annotations become the Details of a "Driver" task event: client/allocrunner/
   * alloc_runner.go, `GetTaskEventHandler`), a "Driver Failure" when the pull fails. A pull
   * succeeds when the test's registry serves the reference; the fake then starts the task
   * from the copy on this host, which must exist. False when there is no image to start from.
   */
  private obtainImage(alloc: Allocation, task: Json, onNode: boolean): boolean {
    const image = String(task.Config?.image ?? '');
    const step = createImage(image, { onNode, served: this.registry.has(image) && onNode, forcePull: task.Config?.force_pull === true });
    if (step.pulls) this.event(alloc, task, { Type: 'Driver', DisplayMessage: 'Downloading image', DriverMessage: 'Downloading image', Details: { image } });
    if (!step.available) this.event(alloc, task, { Type: 'Driver Failure', DisplayMessage: pullFailure(image), DriverError: pullFailure(image) });
    return step.available;
  }

  private notRestarting(alloc: Allocation, task: Json, policy: Json): void {
    this.event(alloc, task, {
      Type: 'Not Restarting', FailsTask: true,
      DisplayMessage: `Exceeded allowed attempts ${policy.Attempts} in interval ${policy.Interval / 1e9}s and mode is "${policy.Mode}"`,
    });
    this.finish(alloc, task, 'failed');
  }

  private async waitForExit(alloc: Allocation): Promise<number> {
    for (;;) {
      await sleep(250);
      if (alloc.stopRequested || this.closed) return 0;
      const state = await taskState(alloc.container).catch(() => ({ running: false, exitCode: 137 }));
      if (!state.running) return state.exitCode;
    }
  }

  private setRunning(alloc: Allocation, task: Json): void {
    const state = alloc.public.TaskStates[task.Name];
    state.State = 'running';
    state.StartedAt = new Date().toISOString();
    alloc.public.ClientStatus = 'running';
    alloc.public.ClientDescription = 'Tasks are running';
    this.consulChanged();
    this.event(alloc, task, { Type: 'Started', DisplayMessage: 'Task started by client' });
  }

  private finish(alloc: Allocation, task: Json, status: 'failed' | 'complete'): void {
    const state = alloc.public.TaskStates[task.Name];
    state.State = 'dead';
    state.Failed = status === 'failed';
    state.FinishedAt = new Date().toISOString();
    alloc.identityFiles?.stop(); // identity_hook.go, `Stop`: no renewal for a dead task
    alloc.public.ClientStatus = status;
    alloc.healthy = false;
    this.touch(alloc);
    const stored = this.jobs.get(alloc.public.JobID);
    if (stored) this.settleDeployment(stored);
  }

  private event(alloc: Allocation, task: Json, event: Json): void {
    const state = alloc.public.TaskStates[task.Name];
    // Nomad keeps a task's last 10 events only.
    state.Events = [...state.Events, { Time: nanos(), Message: '', Details: {}, ...event }].slice(-10);
    this.touch(alloc);
  }

  private touch(alloc: Allocation): void {
    alloc.public.ModifyIndex = this.bump();
    alloc.public.ModifyTime = nanos();
    this.allocsIndex = this.index;
    for (const wake of [...this.allocWaiters]) wake();
  }

  /** Resolves when any allocation changes, or after `ms`. */
  waitForAllocs(ms: number): Promise<void> {
    return waitOn(this.allocWaiters, ms);
  }

  /** ShutdownDelay first (out of Consul, then the delay), then the container is killed. */
  private stop(alloc: Allocation): void {
    if (alloc.public.DesiredStatus !== 'run') return;
    alloc.public.DesiredStatus = 'stop';
    alloc.stopRequested = true;
    this.setHealth(alloc, false);
    this.touch(alloc);
    this.consulChanged();
    const stored = this.jobs.get(alloc.public.JobID);
    const group = (stored?.job.TaskGroups as Json[] | undefined)?.find((g) => g.Name === alloc.public.TaskGroup);
    const task = (group?.Tasks?.[0] ?? { Name: Object.keys(alloc.public.TaskStates)[0] }) as Json;
    if (alloc.simulated) return this.finish(alloc, task, 'complete');
    void (async () => {
      await sleep(Math.min((group?.ShutdownDelay ?? 0) / 1e6, 5_000));
      this.event(alloc, task, { Type: 'Killing', DisplayMessage: 'Sent interrupt. Waiting 5s before force killing' });
      await removeTask(alloc.container);
      this.event(alloc, task, { Type: 'Killed', DisplayMessage: 'Task successfully killed' });
      if (LIVE.has(alloc.public.ClientStatus)) this.finish(alloc, task, 'complete');
    })();
  }

  // ---- Workload identities ----

  /**
   * The JWT of the named identity of an allocation's task, as the server signs one for the
   * client (nomad/alloc_endpoint.go, `Alloc.SignIdentities`, building the claims of the job
   * version the allocation runs): "allocation not found" and "identity not found" as its
   * rejections say (nomad/structs/workload_id.go, `WIRejectionReason…`).
   */
  identityToken(allocId: string, identityName: string, now = new Date()): string {
    const alloc = this.allocs.get(allocId);
    if (!alloc) throw new Error('allocation not found');
    const task = this.taskOf(alloc.public);
    const identity = ((task?.Identities ?? []) as Json[]).find((candidate) => candidate.Name === identityName);
    if (!identity) throw new Error('identity not found');
    return this.signIdentity(alloc.public, identity, now).jwt;
  }

  private signIdentity(alloc: Json, identity: Json, now: Date): { jwt: string; expiresAtMs: number | null } {
    const job = this.jobVersionOf(alloc);
    const task = this.taskOf(alloc)!;
    const claims = workloadIdentityClaims({ job, region: job.Region || 'global', alloc, task, identity, issuer: this.issuer, now });
    return { jwt: this.keyring.sign(claims), expiresAtMs: typeof claims.exp === 'number' ? claims.exp * 1000 : null };
  }

  /** The job as of the version the allocation runs (an in-place update moves it). */
  private jobVersionOf(alloc: Json): Json {
    const stored = this.jobs.get(alloc.JobID)!;
    return stored.history.find((version) => version.Version === alloc.JobVersion) ?? stored.job;
  }

  private taskOf(alloc: Json): Json | undefined {
    const group = ((this.jobVersionOf(alloc).TaskGroups ?? []) as Json[]).find((candidate) => candidate.Name === alloc.TaskGroup);
    return (group?.Tasks as Json[] | undefined)?.[0];
  }

  // ---- Consul ----

  /** Passing instances of a service, as /v1/health/service/:name?passing=true answers. */
  passing(service: string): { index: number; entries: Json[] } {
    const entries: Json[] = [];
    for (const alloc of this.allocs.values()) {
      // An instance carries its node's checks too, and `?passing` drops it when one fails.
      if (!alloc.healthy || !this.nodeAlive) continue;
      const stored = this.jobs.get(alloc.public.JobID);
      const group = (stored?.job.TaskGroups as Json[] | undefined)?.find((g) => g.Name === alloc.public.TaskGroup);
      for (const svc of (group?.Services ?? []) as Json[]) {
        if (svc.Name !== service) continue;
        const id = `_nomad-task-${alloc.public.ID}-group-${group!.Name}-${svc.Name}-${svc.PortLabel}`;
        entries.push({
          Node: { ID: 'fake-node-0', Node: 'fake-client', Address: '127.0.0.1', Datacenter: 'dc1' },
          Service: { ID: id, Service: svc.Name, Tags: registeredTags(alloc, svc), Address: '127.0.0.1', Port: alloc.hostPort, Meta: svc.Meta ?? {} },
          Checks: [
            this.serfHealth(),
            { Node: 'fake-client', CheckID: `_nomad-check-${id}`, Name: (svc.Checks?.[0]?.Name as string) ?? 'service', Status: 'passing', ServiceID: id, Output: 'HTTP GET: 200 OK' },
          ],
        });
      }
    }
    return { index: this.consulIndex.get(service) ?? 1, entries };
  }

  /** Resolves when any service changes, or after `ms`. */
  waitForConsul(ms: number): Promise<void> {
    return waitOn(this.consulWaiters, ms);
  }

  /**
   * Every check, as /v1/health/state/any lists them (Consul's api/health.go `HealthCheck`):
   * the client node's serfHealth, which Consul's agent registers for its node (no service,
   * no tags), and each registered agent service's. Nomad registers a group's services once
   * the allocation runs and deregisters them when it stops (client/allocrunner/groupservice_hook.go).
   */
  healthChecks(): Json[] {
    const checks: Json[] = [this.serfHealth()];
    for (const alloc of this.allocs.values()) {
      if (alloc.public.DesiredStatus !== 'run' || alloc.public.ClientStatus !== 'running') continue;
      const group = this.groupOf(alloc);
      for (const svc of (group?.Services ?? []) as Json[]) {
        const serviceId = `_nomad-task-${alloc.public.ID}-group-${group!.Name}-${svc.Name}-${svc.PortLabel}`;
        for (const check of (svc.Checks ?? []) as Json[]) {
          checks.push({
            Node: 'fake-client', CheckID: `_nomad-check-${alloc.public.ID.slice(0, 8)}-${check.Name}`, Name: check.Name, Status: alloc.healthy ? 'passing' : 'critical',
            Notes: '', Output: alloc.healthy ? 'HTTP GET: 200 OK' : '', ServiceID: serviceId, ServiceName: svc.Name, ServiceTags: registeredTags(alloc, svc), Type: check.Type,
            Definition: {}, CreateIndex: alloc.public.CreateIndex, ModifyIndex: this.checksIndex,
          });
        }
      }
    }
    return checks;
  }

  /** The node check Consul's agent keeps for its node (agent/consul/leader_registrator_v1.go, `HandleAliveMember`, `HandleFailedMember`: "Agent not live or unreachable"). */
  private serfHealth(): Json {
    return {
      Node: 'fake-client', CheckID: 'serfHealth', Name: 'Serf Health Status', Status: this.nodeAlive ? 'passing' : 'critical', Notes: '',
      Output: this.nodeAlive ? 'Agent alive and reachable' : 'Agent not live or unreachable', ServiceID: '', ServiceName: '', ServiceTags: [], Type: '',
      Definition: {}, CreateIndex: 1, ModifyIndex: this.checksIndex,
    };
  }

  /** A test takes the client node's Consul agent out of gossip (serfHealth critical) or back; Nomad is told nothing. */
  setNodeAlive(alive: boolean): void {
    if (this.nodeAlive === alive) return;
    this.nodeAlive = alive;
    for (const stored of this.jobs.values()) {
      for (const group of (stored.job.TaskGroups ?? []) as Json[]) {
        for (const svc of (group.Services ?? []) as Json[]) this.consulIndex.set(svc.Name, (this.consulIndex.get(svc.Name) ?? 1) + 1);
      }
    }
    this.consulChanged();
  }

  private groupOf(alloc: Allocation): Json | undefined {
    const stored = this.jobs.get(alloc.public.JobID);
    return (stored?.job.TaskGroups as Json[] | undefined)?.find((g) => g.Name === alloc.public.TaskGroup);
  }

  /** A test turns an allocation's checks passing or critical (kept for simulated ones; a real one's next check decides). */
  setHealthy(id: string, healthy: boolean): void {
    const alloc = this.allocs.get(id);
    if (alloc) this.setHealth(alloc, healthy);
  }

  private consulChanged(): void {
    this.checksIndex = this.bump();
    for (const wake of [...this.consulWaiters]) wake();
  }

  /**
   * A Variable was written: every live task whose template reads it renders again, and
   * acts on its change_mode (client/allocrunner/taskrunner/template/template.go,
   * `handleTemplateRerenders`): "restart" restarts the task at once, in every allocation,
   * whatever the update block says; "noop" leaves the task as it runs.
   */
  variableWritten(path: string): void {
    for (const alloc of this.allocs.values()) {
      if (alloc.public.DesiredStatus !== 'run' || !LIVE.has(alloc.public.ClientStatus)) continue;
      const task = (this.groupOf(alloc)?.Tasks?.[0] ?? null) as Json | null;
      const reading = ((task?.Templates ?? []) as Json[]).filter((t) => String(t.EmbeddedTmpl ?? '').includes(`nomadVar "${path}"`));
      if (!task || reading.length === 0) continue;
      if (reading.some((t) => (t.ChangeMode ?? 'restart') === 'restart')) {
        alloc.public.TaskStates[task.Name].Restarts += 1;
        this.event(alloc, task, { Type: 'Restart Signaled', DisplayMessage: 'Template with change_mode restart re-rendered' });
      } else if (reading.some((t) => t.ChangeMode === 'signal')) {
        this.event(alloc, task, { Type: 'Signaling', DisplayMessage: 'Template re-rendered' });
      }
    }
  }

  private setHealth(alloc: Allocation, healthy: boolean): void {
    if (alloc.healthy === healthy) return;
    alloc.healthy = healthy;
    this.consulChanged();
    const stored = this.jobs.get(alloc.public.JobID);
    for (const group of (stored?.job.TaskGroups ?? []) as Json[]) {
      for (const svc of (group.Services ?? []) as Json[]) this.consulIndex.set(svc.Name, (this.consulIndex.get(svc.Name) ?? 1) + 1);
    }
    if (healthy) this.watchDeploymentHealth(alloc);
    else clearTimeout(alloc.healthTimer);
    this.touch(alloc);
    for (const wake of [...this.consulWaiters]) wake();
    if (stored) this.reconcile(stored.job.ID);
  }

  private checking = false;
  private async runChecks(): Promise<void> {
    if (this.checking || this.closed) return;
    this.checking = true;
    try {
      await Promise.all([...this.allocs.values()].map(async (alloc) => {
        if (alloc.stopRequested || alloc.simulated) return;
        if (alloc.public.ClientStatus !== 'running') return this.setHealth(alloc, false);
        const stored = this.jobs.get(alloc.public.JobID);
        const group = (stored?.job.TaskGroups as Json[] | undefined)?.find((g) => g.Name === alloc.public.TaskGroup);
        const check = group?.Services?.[0]?.Checks?.[0] as Json | undefined;
        if (!check) return;
        const ok = check.Type === 'http' ? await httpCheck(alloc.hostPort, check.Path ?? '/') : await tcpCheck(alloc.hostPort);
        if (!alloc.stopRequested) this.setHealth(alloc, ok);
      }));
    } finally {
      this.checking = false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.checker);
    for (const alloc of this.allocs.values()) {
      alloc.stopRequested = true;
      alloc.identityFiles?.stop();
    }
    for (const wake of [...this.consulWaiters, ...this.allocWaiters]) wake();
    if (!this.simulate) await removeLabelled(this.label);
    rmSync(this.taskDirectories, { recursive: true, force: true });
  }

  /** Where the client keeps its tasks' directories on this host (the parts the fake plays: secrets). */
  private get taskDirectories(): string {
    return join(tmpdir(), `fake-nomad-${this.label}`);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const placingKey = (stored: StoredJob, group: Json) => `${stored.job.ID}\0${group.Name}\0${stored.version}`;

const deploymentHealthy = (alloc: Allocation) => alloc.public.DeploymentStatus?.Healthy === true;

/**
 * The allocations past the count to stop (reconcile_cluster.go, `computeStop`): first
 * those sharing a name with a promoted canary ("Prefer stopping any alloc that has the
 * same name as the canaries if we are promoted"), then the highest name indexes. `live`
 * is sorted by name index, the highest first.
 */
function surplusOf(live: Allocation[], count: number, canaries: ReadonlySet<string>): Allocation[] {
  let remove = Math.max(0, live.length - count);
  const stop: Allocation[] = [];
  const canaryNames = new Set(live.filter((a) => canaries.has(a.public.ID)).map(nameIndex));
  for (const alloc of live) {
    if (remove === 0) break;
    if (!canaries.has(alloc.public.ID) && canaryNames.has(nameIndex(alloc))) {
      stop.push(alloc);
      remove -= 1;
    }
  }
  for (const alloc of live) {
    if (remove === 0) break;
    if (!stop.includes(alloc)) {
      stop.push(alloc);
      remove -= 1;
    }
  }
  return stop;
}

/**
 * The tags an allocation's service is registered with: a canary's are the service's
 * CanaryTags when it has any (command/agent/consul/service_client.go, `serviceRegs`:
 * `workload.Canary && len(service.CanaryTags) > 0`), until its promotion clears the flag.
 */
const registeredTags = (alloc: Allocation, svc: Json): string[] =>
  alloc.public.DeploymentStatus?.Canary === true && (svc.CanaryTags?.length ?? 0) > 0 ? svc.CanaryTags : svc.Tags ?? [];

/** The N of an allocation's name `<job>.<group>[N]` (structs.Allocation.Index). */
const nameIndex = (alloc: Allocation) => Number(/\[(\d+)\]$/.exec(alloc.public.Name)?.[1] ?? 0);

/** The lowest index no allocation of the group holds (reconciler `AllocNameIndex.Next`), marked taken. */
function freeIndex(taken: Set<number>): number {
  let index = 0;
  while (taken.has(index)) index += 1;
  taken.add(index);
  return index;
}

/** The fields structs.Job.SpecChanged copies from the existing job before comparing, so they never count as a change. */
const NOT_SPEC = new Set(['Status', 'StatusDescription', 'Stable', 'Version', 'CreateIndex', 'ModifyIndex', 'JobModifyIndex', 'SubmitTime']);

function specChanged(existing: Json, incoming: Json): boolean {
  const spec = (job: Json) => canonical(Object.fromEntries(Object.entries({ Stop: false, ...job }).filter(([key]) => !NOT_SPEC.has(key))));
  return spec(existing) !== spec(incoming);
}

/** JSON with object keys sorted, so two equal jobs compare equal whatever their key order (reflect.DeepEqual's sense). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Json)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

function waitOn(waiters: Set<() => void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      waiters.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    waiters.add(done);
  });
}

async function httpCheck(port: number, path: string): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1_000) });
    await response.arrayBuffer();
    return response.status >= 200 && response.status < 300;
  } catch {
    return false;
  }
}

function tcpCheck(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 1_000 }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
