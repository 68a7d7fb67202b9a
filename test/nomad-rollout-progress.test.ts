import assert from 'node:assert/strict';
import type { AllocationListStub, NomadTaskEvent, NomadTaskState } from '../control/orchestrator/nomad/api-types.js';
import { progressFrom, type ProgressInputs, type ReportedSteps } from '../control/orchestrator/nomad/rollout-progress.js';

/**
 * The Nomad driver's rollout steps from its allocation watch and Consul's health, without
 * Nomad: shapes as Nomad's api/allocations.go and api/tasks.go have them; the "Driver"
 * event as client/allocrunner/alloc_runner.go makes it from drivers/docker/driver.go's
 * "Downloading image".
 */
const T0 = 1_732_300_000_000_000_000;
const AT = new Date('2026-11-23T03:00:00Z');
const event = (Type: string, extra: Partial<NomadTaskEvent> = {}): NomadTaskEvent => ({ Type, Time: T0, Message: '', DisplayMessage: Type, Details: {}, ...extra });
const downloading = event('Driver', { DisplayMessage: 'Downloading image', DriverMessage: 'Downloading image', Details: { image: 'localhost/agent:latest' } });

const OLD = '1f2e3d4c-5b6a-4789-8abc-def012345678';
const NEW = '9e4c8b3e-2d1f-4c1b-8c6e-0a1b2c3d4e5f';

function allocation(id: string, jobVersion: number, ClientStatus: AllocationListStub['ClientStatus'], task: Partial<NomadTaskState>, overrides: Partial<AllocationListStub> = {}): AllocationListStub {
  return {
    ID: id, Name: `agent-ag_1.agent[0]`, NodeName: 'client-1', JobID: 'agent-ag_1', JobVersion: jobVersion, TaskGroup: 'agent',
    ClientStatus, DesiredStatus: 'run', DesiredDescription: '', CreateTime: T0, ModifyTime: T0,
    TaskStates: { agent: { State: 'pending', Failed: false, Restarts: 0, StartedAt: null, FinishedAt: null, Events: [event('Received')], ...task } },
    ...overrides,
  };
}

/** Nomad job version 0 is our version 3 (the old one), 1 is our 4 (rolled out now). */
const inputs = (allocations: AllocationListStub[], overrides: Partial<ProgressInputs> = {}): ProgressInputs => ({
  agentId: 'ag_1', version: 4, allocations, passing: new Set(), versions: new Map([[0, 3], [1, 4]]), unknownAbove: null, at: AT, ...overrides,
});

const steps = (reported: ReportedSteps, ...args: Parameters<typeof inputs>) =>
  progressFrom(inputs(...args), reported).map((p) => [p.phase, p.replicaId, p.version]);

describe('nomad driver: rollout steps from allocations (control/orchestrator/nomad/rollout-progress.ts)', () => {
  it('a new allocation is starting, then pulling, then health_check once its task runs, then routing once Consul passes it: each once', () => {
    const reported: ReportedSteps = new Map();
    assert.deepEqual(steps(reported, [allocation(NEW, 1, 'pending', {})]), [['starting', NEW, 4]]);
    assert.deepEqual(steps(reported, [allocation(NEW, 1, 'pending', { Events: [event('Received'), downloading] })]), [['pulling', NEW, 4]]);
    const running = allocation(NEW, 1, 'running', { State: 'running', Events: [event('Received'), downloading, event('Started')] });
    assert.deepEqual(steps(reported, [running]), [['health_check', NEW, 4]]);
    assert.deepEqual(steps(reported, [running]), [], 'nothing new');
    assert.deepEqual(steps(reported, [running], { passing: new Set([NEW]) }), [['routing', NEW, 4]]);
  });

  it('an allocation first seen running reports the steps it went through, in order, with their messages', () => {
    const running = allocation(NEW, 1, 'running', { State: 'running', Events: [event('Received'), downloading, event('Started')] });
    const progress = progressFrom(inputs([running], { passing: new Set([NEW]) }), new Map());
    assert.deepEqual(progress.map((p) => [p.phase, p.message]), [
      ['starting', 'allocation agent-ag_1.agent[0] placed on client-1'],
      ['pulling', 'downloading image localhost/agent:latest'],
      ['health_check', 'task running; waiting for its Consul checks to pass'],
      ['routing', 'Consul checks pass: in the routing set'],
    ]);
    assert.ok(progress.every((p) => p.agentId === 'ag_1' && p.at === AT && p.orchestratorVersion === undefined));
  });

  it('no pulling step when the client had the image (no "Downloading image" event)', () => {
    const running = allocation(NEW, 1, 'running', { State: 'running', Events: [event('Received'), event('Task Setup'), event('Started')] });
    assert.deepEqual(steps(new Map(), [running]).map(([phase]) => phase), ['starting', 'health_check']);
  });

  it('an older allocation Nomad stops is drained, for the version that replaces it; a stopped one of the current version (a scale-down) is not', () => {
    const reported: ReportedSteps = new Map();
    const old = allocation(OLD, 0, 'running', { State: 'running' });
    assert.deepEqual(steps(reported, [old], { passing: new Set([OLD]) }).map(([phase, , version]) => [phase, version]), [['starting', 3], ['health_check', 3], ['routing', 3]]);
    const stopping = { ...old, DesiredStatus: 'stop' as const, DesiredDescription: 'alloc is being updated due to job update' };
    const drained = progressFrom(inputs([stopping]), reported);
    assert.deepEqual(drained.map((p) => [p.phase, p.replicaId, p.version, p.message]), [['draining', OLD, 4, 'version 3 stopping: alloc is being updated due to job update']]);
    assert.deepEqual(steps(reported, [{ ...stopping, ClientStatus: 'complete' }]), [], 'drained once');
    const scaledDown = allocation(NEW, 1, 'running', { State: 'running' }, { DesiredStatus: 'stop', DesiredDescription: 'alloc not needed due to job update' });
    assert.deepEqual(steps(new Map(), [scaledDown]), []);
  });

  it('while a registration is in flight, allocations of a Nomad version not read yet wait; they are reported once it is known', () => {
    const reported: ReportedSteps = new Map();
    const placed = allocation(NEW, 2, 'pending', {});
    // Version 2 is not in the map yet: it would pass for our version 4 (the last one before it).
    assert.deepEqual(steps(reported, [placed], { unknownAbove: 1 }), []);
    assert.deepEqual(steps(reported, [placed], { versions: new Map([[0, 3], [1, 4], [2, 5]]), version: 5 }), [['starting', NEW, 5]]);
  });

  it('forgets allocations Nomad no longer lists', () => {
    const reported: ReportedSteps = new Map();
    steps(reported, [allocation(NEW, 1, 'pending', {})]);
    assert.deepEqual([...reported.keys()], [NEW]);
    steps(reported, []);
    assert.equal(reported.size, 0);
  });
});
