import type { JobEvent, Replica, ReplicaState } from '../../domain/job.js';
import type { AllocationListStub, NomadTaskEvent, NomadTaskState } from './api-types.js';
import { PORT_LABEL, TASK } from './job-spec.js';

/**
 * Allocations and their task events → our seven replica states. The table, first match
 * wins (docs/nomad.md, "The driver" keeps it for operators):
 *
 * | Allocation (DesiredStatus / ClientStatus)      | Task `agent`                                      | Replica      |
 * |------------------------------------------------|---------------------------------------------------|--------------|
 * | stop or evict / complete, failed, lost         | –                                                 | left out     |
 * | stop or evict / running                        | still passing in Consul (not yet deregistered)    | `running`    |
 * | stop or evict / pending, running, unknown      | –                                                 | `stopping`   |
 * | any                                            | ever a "Driver Failure" "Failed to pull …"       | `failed`     |
 * | run / failed, or task Failed                   | exited (a "Terminated" event)                     | `crashed`    |
 * | run / failed, or task Failed                   | never ran (setup, validation, driver failure)     | `failed`     |
 * | run / complete or lost                         | –                                                 | left out (Nomad replaces it) |
 * | run / pending                                  | last event "Restarting"                           | `restarting` |
 * | run / pending or unknown                       | anything else                                     | `starting`   |
 * | run / running                                  | passing in Consul                                 | `running`    |
 * | run / running                                  | not (yet) passing in Consul                       | `starting`   |
 *
 * `pending` (accepted, nothing placed) has no allocation: the count not yet placed shows
 * in the agent's status as `pending` when no replica exists.
 */
export interface ReplicaInputs {
  allocations: AllocationListStub[];
  /** Allocations whose Consul checks all pass (from the health watch). */
  passing: ReadonlySet<string>;
  /** Allocation id → the first "Failed to pull" message seen; updated here, kept by the caller. */
  pullFailures: Map<string, string>;
  /** Nomad job version → our agent version (from the job's Meta). */
  versions: ReadonlyMap<number, number>;
  fallbackVersion: number;
  image: string;
  restartBudget: number;
}

/**
 * Our version of each allocation's Nomad job version, from `known` (Nomad version → the
 * agent_version of its Meta, read after each registration and scale): Meta changes only
 * when we register a deploy, so a version we did not read (a scale's, the Nomad
 * Autoscaler's: each is a job version of its own) has the Meta of the last one before it.
 */
export function ourVersions(known: ReadonlyMap<number, number>, allocations: AllocationListStub[]): Map<number, number> {
  const sorted = [...known.entries()].sort((a, b) => a[0] - b[0]);
  const versions = new Map<number, number>();
  for (const allocation of allocations) {
    const before = sorted.filter(([nomadVersion]) => nomadVersion <= allocation.JobVersion).pop();
    if (before) versions.set(allocation.JobVersion, before[1]);
  }
  return versions;
}

const PULL_FAILURE = /failed to pull/i;

const eventText = (event: NomadTaskEvent) =>
  event.DisplayMessage || event.DriverError || event.Message || event.Details?.driver_error || event.Details?.message || event.Type;

/**
 * Nomad keeps only the last 10 events of a task, so the first pull failure is recorded
 * when seen: later restarts' events push it out of the window.
 */
export function rememberPullFailures(allocations: AllocationListStub[], pullFailures: Map<string, string>): void {
  for (const allocation of allocations) {
    if (pullFailures.has(allocation.ID)) continue;
    const failure = taskState(allocation)?.Events?.find((event) => event.Type === 'Driver Failure' && PULL_FAILURE.test(eventText(event)));
    if (failure) pullFailures.set(allocation.ID, eventText(failure));
  }
}

export function replicasFrom(inputs: ReplicaInputs): Replica[] {
  rememberPullFailures(inputs.allocations, inputs.pullFailures);
  const replicas: Replica[] = [];
  for (const allocation of inputs.allocations) {
    const observed = observe(allocation, inputs);
    if (!observed) continue;
    const task = taskState(allocation);
    replicas.push({
      id: allocation.ID,
      version: inputs.versions.get(allocation.JobVersion) ?? inputs.fallbackVersion,
      state: observed.state,
      address: observed.state === 'running' ? addressOf(allocation) : null,
      // Exits, as the podman driver counts them: Nomad's restarts, plus the last exit of a crashed task.
      restarts: (task?.Restarts ?? 0) + (observed.state === 'crashed' ? 1 : 0),
      startedAt: task?.StartedAt && !task.StartedAt.startsWith('0001-') ? new Date(task.StartedAt) : null,
      error: observed.error,
    });
  }
  return replicas;
}

function observe(allocation: AllocationListStub, inputs: ReplicaInputs): { state: ReplicaState; error: string | null } | null {
  const terminal = ['complete', 'failed', 'lost'].includes(allocation.ClientStatus);
  if (allocation.DesiredStatus !== 'run') {
    if (terminal) return null;
    // Nomad takes a stopping allocation out of Consul first, then waits the group's
    // shutdown_delay before the signal: until Consul says so, it still serves.
    const draining = allocation.ClientStatus === 'running' && inputs.passing.has(allocation.ID);
    return { state: draining ? 'running' : 'stopping', error: null };
  }

  const pullFailure = inputs.pullFailures.get(allocation.ID);
  if (pullFailure) return { state: 'failed', error: `image ${inputs.image} could not be pulled: ${pullFailure}` };

  const task = taskState(allocation);
  const events = task?.Events ?? [];
  if (allocation.ClientStatus === 'failed' || task?.Failed) {
    const exit = [...events].reverse().find((event) => event.Type === 'Terminated');
    if (exit) {
      const code = exit.ExitCode ?? exit.Details?.exit_code ?? '?';
      return { state: 'crashed', error: `exited with code ${code}; restarted ${task?.Restarts ?? inputs.restartBudget} times` };
    }
    const cause = [...events].reverse().find((event) => event.FailsTask || /Failure|Failed/.test(event.Type));
    return { state: 'failed', error: cause ? eventText(cause) : allocation.DesiredDescription || 'the allocation failed' };
  }
  if (terminal) return null;
  if (allocation.ClientStatus === 'running' && task?.State === 'running') {
    return { state: inputs.passing.has(allocation.ID) ? 'running' : 'starting', error: null };
  }
  const last = events[events.length - 1];
  if (last?.Type === 'Restarting') return { state: 'restarting', error: null };
  return { state: 'starting', error: null };
}

/**
 * Where the edge reaches a replica: the host address and port Nomad gave its port label,
 * which is also what Nomad registers in Consul for a group service in host networking
 * (client/serviceregistration/address.go, `GetAddress`, address mode "host": the port mapping's HostIP and Value).
 */
export function addressOf(allocation: AllocationListStub): string | null {
  const port = allocation.AllocatedResources?.Shared?.Ports?.find((mapping) => mapping.Label === PORT_LABEL);
  return port && port.HostIP ? `${port.HostIP}:${port.Value}` : null;
}

const taskState = (allocation: AllocationListStub): NomadTaskState | undefined => allocation.TaskStates?.[TASK];

/** Task events of every allocation as job events, oldest first. */
export function eventsFrom(allocations: AllocationListStub[]): JobEvent[] {
  return allocations
    .flatMap((allocation) =>
      (taskState(allocation)?.Events ?? []).map((event) => ({
        at: new Date(Math.floor(event.Time / 1_000_000)),
        replicaId: allocation.ID,
        type: event.Type,
        message: eventText(event),
      })),
    )
    .sort((a, b) => a.at.getTime() - b.at.getTime());
}
