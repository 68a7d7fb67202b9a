import assert from 'node:assert/strict';
import type { AllocationListStub, NomadTaskEvent, NomadTaskState } from '../control/orchestrator/nomad/api-types.js';
import { eventsFrom, replicasFrom, type ReplicaInputs } from '../control/orchestrator/nomad/status.js';

// Shapes from Nomad's /v1/job/:job_id/allocations docs and api/allocations.go, trimmed to real fields.
const T0 = 1_732_300_000_000_000_000;
const event = (Type: string, seconds: number, extra: Partial<NomadTaskEvent> = {}): NomadTaskEvent => ({
  Type,
  Time: T0 + seconds * 1_000_000_000,
  Message: '',
  DisplayMessage: extra.DisplayMessage ?? Type,
  Details: {},
  FailsTask: false,
  ...extra,
});

const received = event('Received', 0, { DisplayMessage: 'Task received by client' });
const setup = event('Task Setup', 1, { DisplayMessage: 'Building Task Directory' });
const started = event('Started', 2, { DisplayMessage: 'Task started by client' });

function allocation(id: string, ClientStatus: AllocationListStub['ClientStatus'], task: Partial<NomadTaskState> | null, overrides: Partial<AllocationListStub> = {}): AllocationListStub {
  return {
    ID: id,
    Name: 'agent-ag_1.agent[0]',
    JobID: 'agent-ag_1',
    JobVersion: 0,
    TaskGroup: 'agent',
    ClientStatus,
    DesiredStatus: 'run',
    DesiredDescription: '',
    CreateTime: T0,
    ModifyTime: T0,
    AllocatedResources: { Shared: { Ports: [{ Label: 'http', Value: 24571, To: 8080, HostIP: '10.0.0.7' }] } },
    TaskStates: task
      ? { agent: { State: 'pending', Failed: false, Restarts: 0, StartedAt: null, FinishedAt: null, Events: [received], ...task } }
      : null,
    ...overrides,
  };
}

const A = '9e4c8b3e-2d1f-4c1b-8c6e-0a1b2c3d4e5f';
const B = '1f2e3d4c-5b6a-4789-8abc-def012345678';

function inputs(allocations: AllocationListStub[], overrides: Partial<ReplicaInputs> = {}): ReplicaInputs {
  return {
    allocations,
    passing: new Set(),
    pullFailures: new Map(),
    versions: new Map([[0, 3], [1, 4]]),
    fallbackVersion: 4,
    image: 'registry.invalid/no/such-image:1',
    restartBudget: 2,
    ...overrides,
  };
}

describe('nomad driver: allocations → replica states', () => {
  it('a placed allocation whose task has not started is starting', () => {
    const [replica] = replicasFrom(inputs([allocation(A, 'pending', { Events: [received, setup] })]));
    assert.deepEqual({ state: replica!.state, address: replica!.address, version: replica!.version }, { state: 'starting', address: null, version: 3 });
    assert.equal(replicasFrom(inputs([allocation(A, 'pending', null)]))[0]!.state, 'starting');
  });

  it('a running task is running (with its address) only once it passes in Consul', () => {
    const running = allocation(A, 'running', { State: 'running', StartedAt: '2026-11-23T03:00:02.5Z', Events: [received, setup, started] });
    assert.equal(replicasFrom(inputs([running]))[0]!.state, 'starting');
    const [replica] = replicasFrom(inputs([running], { passing: new Set([A]) }));
    assert.deepEqual(
      { state: replica!.state, address: replica!.address, startedAt: replica!.startedAt?.toISOString() },
      { state: 'running', address: '10.0.0.7:24571', startedAt: '2026-11-23T03:00:02.500Z' },
    );
  });

  it('a task waiting out its restart delay is restarting', () => {
    const task = { State: 'pending' as const, Restarts: 1, Events: [received, started, event('Terminated', 3, { ExitCode: 3, DisplayMessage: 'Exit Code: 3' }), event('Restarting', 3, { DisplayMessage: 'Task restarting in 1.2s' })] };
    const [replica] = replicasFrom(inputs([allocation(A, 'running', task)]));
    assert.deepEqual({ state: replica!.state, restarts: replica!.restarts }, { state: 'restarting', restarts: 1 });
  });

  it('restarts past the policy are crashed, with the exit code, counting every exit', () => {
    const events = [received, started, event('Terminated', 3, { ExitCode: 3 }), event('Restarting', 3), event('Started', 5), event('Terminated', 6, { ExitCode: 3 }), event('Restarting', 6), event('Started', 8), event('Terminated', 9, { ExitCode: 3 }), event('Not Restarting', 9, { DisplayMessage: 'Exceeded allowed attempts 2 in interval 30m0s and mode is "fail"', FailsTask: true })];
    const [replica] = replicasFrom(inputs([allocation(A, 'failed', { State: 'dead', Failed: true, Restarts: 2, Events: events })]));
    assert.deepEqual({ state: replica!.state, restarts: replica!.restarts, error: replica!.error }, { state: 'crashed', restarts: 3, error: 'exited with code 3; restarted 2 times' });
  });

  it('an image pull failure is failed with Nomad’s first message, kept after the 10-event window drops it', () => {
    const pull = event('Driver Failure', 2, {
      DisplayMessage: 'Failed to pull `registry.invalid/no/such-image:1`: Error response from daemon: Get "https://registry.invalid/v2/": dial tcp: lookup registry.invalid: no such host',
      DriverError: 'Failed to pull `registry.invalid/no/such-image:1`: Error response from daemon: ...',
    });
    const pullFailures = new Map<string, string>();
    const early = allocation(A, 'pending', { Events: [received, setup, event('Driver', 1, { DisplayMessage: 'Downloading image' }), pull, event('Restarting', 2)] });
    const [first] = replicasFrom(inputs([early], { pullFailures }));
    assert.equal(first!.state, 'failed');
    assert.match(first!.error!, /^image registry\.invalid\/no\/such-image:1 could not be pulled: Failed to pull `registry\.invalid\/no\/such-image:1`: Error response from daemon/);

    // Later: ten restart events later, only "Restarting"/"Driver Failure: context deadline" remain.
    const later = allocation(A, 'pending', { Restarts: 6, Events: Array.from({ length: 10 }, (_, i) => event(i % 2 ? 'Restarting' : 'Driver Failure', 20 + i, { DisplayMessage: 'failed to create container: context deadline exceeded' })) });
    const [again] = replicasFrom(inputs([later], { pullFailures }));
    assert.equal(again!.state, 'failed');
    assert.equal(again!.error, first!.error);
  });

  it('a task that never ran (driver config refused) is failed with the reason', () => {
    const refused = event('Failed Validation', 1, { DisplayMessage: '1 error occurred:\n\t* Invalid label "cpu_hard_limits"', FailsTask: true });
    const [replica] = replicasFrom(inputs([allocation(A, 'failed', { State: 'dead', Failed: true, Events: [received, refused] })]));
    assert.equal(replica!.state, 'failed');
    assert.match(replica!.error!, /Invalid label/);
  });

  it('an allocation Nomad is stopping is stopping; a stopped one is gone', () => {
    const stopping = allocation(A, 'running', { State: 'running' }, { DesiredStatus: 'stop', DesiredDescription: 'alloc not needed due to job update' });
    const stopped = allocation(B, 'complete', { State: 'dead' }, { DesiredStatus: 'stop' });
    assert.deepEqual(replicasFrom(inputs([stopping, stopped])).map((r) => [r.id, r.state]), [[A, 'stopping']]);
    const draining = replicasFrom(inputs([stopping], { passing: new Set([A]) }));
    assert.deepEqual(draining.map((r) => [r.state, r.address]), [['running', '10.0.0.7:24571']], 'routable until Nomad takes it out of Consul');
  });

  it('versions come from the job Meta of the allocation’s job version', () => {
    const replicas = replicasFrom(inputs([allocation(A, 'running', { State: 'running' }, { JobVersion: 0 }), allocation(B, 'pending', {}, { JobVersion: 1 })]));
    assert.deepEqual(replicas.map((r) => r.version), [3, 4]);
  });

  it('task events become the job’s events, oldest first, with their replica', () => {
    const events = eventsFrom([allocation(A, 'pending', { Events: [setup, received] })]);
    assert.deepEqual(events.map((e) => [e.type, e.replicaId, e.at.getTime()]), [['Received', A, T0 / 1e6], ['Task Setup', A, T0 / 1e6 + 1000]]);
  });
});

describe('nomad driver: reconcile plan', () => {
  const spec = (agentId: string, version: number, count: number, autoScale = false) =>
    ({ agentId, slug: agentId, name: agentId, accountId: 'acc_1', url: `https://${agentId}.example`, version, image: 'i', port: 8080, count, cpu: 1, memoryMb: 128, env: {}, secretEnv: {}, check: 'http', scaling: { enabled: autoScale, min: 1, max: 5 } }) as const;
  const job = (version: number, count: number, stop = false) => ({ ID: 'x', Version: 9, Stop: stop, Meta: { agent_id: 'x', agent_version: String(version) }, TaskGroups: [{ Name: 'agent', Count: count }] });

  it('adopts what runs, scales a count that drifted, submits what is missing or older, removes the rest', async () => {
    const { planReconcile } = await import('../control/orchestrator/nomad/reconcile.js');
    const actions = planReconcile(
      [spec('same', 2, 1), spec('drift', 2, 3), spec('older', 3, 1), spec('missing', 1, 1), spec('stopped', 1, 1), spec('autoscaled', 1, 1, true)],
      new Map([['same', job(2, 1)], ['drift', job(2, 1)], ['older', job(2, 1)], ['stopped', job(1, 1, true)], ['autoscaled', job(1, 4)], ['gone', job(1, 1)]]),
    );
    assert.deepEqual(actions.map((a) => [a.kind, 'spec' in a ? a.spec.agentId : a.agentId]), [
      ['adopt', 'same'], ['scale', 'drift'], ['submit', 'older'], ['submit', 'missing'], ['submit', 'stopped'], ['adopt', 'autoscaled'], ['remove', 'gone'],
    ]);
  });
});
