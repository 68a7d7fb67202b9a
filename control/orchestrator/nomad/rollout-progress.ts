import type { JobSpec, RolloutProgress } from '../../domain/job.js';
import type { AllocationListStub, NomadJobRead, NomadTaskEvent } from './api-types.js';
import { TASK } from './job-spec.js';

type Phase = RolloutProgress['phase'];

/** Allocation id → the rollout steps already reported for it, so each is reported once. */
export type ReportedSteps = Map<string, Set<Phase>>;

export interface ProgressInputs {
  agentId: string;
  /** The version being rolled out (JobSpec.version). */
  version: number;
  allocations: AllocationListStub[];
  /** Allocations whose Consul checks all pass. */
  passing: ReadonlySet<string>;
  /** Nomad job version → our version (from the job's Meta), as status.ts reads replicas. */
  versions: ReadonlyMap<number, number>;
  /** Allocations of a Nomad version above this wait for a later call (their version is not known yet); null: none wait. */
  unknownAbove: number | null;
  at: Date;
}

/**
 * The docker driver's informational event before a pull: a task event of type "Driver"
 * (nomad/structs/structs.go, `TaskDriverMessage`), whose DisplayMessage is its
 * DriverMessage (`TaskEvent.PopulateEventDisplayMessage`), set from the driver's event in
 * client/allocrunner/alloc_runner.go, `GetTaskEventHandler`. drivers/docker/driver.go,
 * `pullImage`, emits "Downloading image" with the image in the "image" annotation, only when
 * it pulls: the tag is "latest", force_pull is set, or the image is not on the client
 * (`createImage`).
 */
const DRIVER_MESSAGE = 'Driver';
const DOWNLOADING_IMAGE = 'Downloading image';

const downloading = (event: NomadTaskEvent) =>
  event.Type === DRIVER_MESSAGE && (event.DisplayMessage || event.DriverMessage) === DOWNLOADING_IMAGE;

/**
 * The steps an allocation has reached, in order. One that Nomad wants running: placed on a
 * client (starting), its image being downloaded there (pulling: on Nomad the pull is the
 * client's, after placement), its task running while Consul's checks have not passed yet
 * (health_check), its checks passing, so the edge routes to it (routing). One of an older
 * version that Nomad stops (DesiredStatus stop or evict: the scheduler replaces it after
 * the new ones are healthy, as the update block says) is drained.
 */
function stepsOf(allocation: AllocationListStub, ours: number, inputs: ProgressInputs): { phase: Phase; message: string }[] {
  if (allocation.DesiredStatus !== 'run') {
    if (ours >= inputs.version) return [];
    return [{ phase: 'draining', message: `version ${ours} stopping: ${allocation.DesiredDescription || 'replaced by the new version'}` }];
  }
  const steps: { phase: Phase; message: string }[] = [{ phase: 'starting', message: `allocation ${allocation.Name} placed on ${allocation.NodeName || 'a client'}` }];
  const task = allocation.TaskStates?.[TASK];
  const pull = (task?.Events ?? []).find(downloading);
  if (pull) steps.push({ phase: 'pulling', message: `downloading image ${pull.Details?.image ?? ''}`.trim() });
  if (allocation.ClientStatus === 'running' && task?.State === 'running') {
    steps.push({ phase: 'health_check', message: 'task running; waiting for its Consul checks to pass' });
    if (inputs.passing.has(allocation.ID)) steps.push({ phase: 'routing', message: 'Consul checks pass: in the routing set' });
  }
  return steps;
}

/**
 * The steps reached since the last call, for the version each belongs to (a drain belongs
 * to the version that replaces it). `reported` is updated here and kept by the caller;
 * allocations Nomad no longer lists (garbage-collected) are forgotten.
 */
export function progressFrom(inputs: ProgressInputs, reported: ReportedSteps): RolloutProgress[] {
  const progress: RolloutProgress[] = [];
  const listed = new Set<string>();
  for (const allocation of inputs.allocations) {
    listed.add(allocation.ID);
    if (inputs.unknownAbove !== null && allocation.JobVersion > inputs.unknownAbove) continue;
    const done = reported.get(allocation.ID) ?? new Set<Phase>();
    reported.set(allocation.ID, done);
    const ours = inputs.versions.get(allocation.JobVersion) ?? inputs.version;
    for (const { phase, message } of stepsOf(allocation, ours, inputs)) {
      if (done.has(phase)) continue;
      done.add(phase);
      const version = phase === 'draining' ? inputs.version : ours;
      progress.push({ agentId: inputs.agentId, version, phase, replicaId: allocation.ID, message, at: inputs.at });
    }
  }
  for (const id of [...reported.keys()]) if (!listed.has(id)) reported.delete(id);
  return progress;
}

/**
 * A rollout's first step on Nomad: the job registered, under the version operators see in
 * Nomad's UI (read back with the job: Nomad's register response has no Version).
 */
export const registeredStep = (spec: JobSpec, job: NomadJobRead, at: Date): RolloutProgress => ({
  agentId: spec.agentId,
  version: spec.version,
  phase: 'starting',
  replicaId: null,
  message: `registered as version ${job.Version} of Nomad job ${job.ID}`,
  at,
  orchestratorVersion: job.Version,
});
