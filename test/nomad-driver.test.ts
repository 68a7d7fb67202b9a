import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import type { AllocationListStub, ConsulHealthCheck, JobRegisterRequest, NomadJob, NomadVariable, ScalingRequest } from '../control/orchestrator/nomad/api-types.js';
import { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { consulClient, nomadClient } from '../control/orchestrator/nomad/http-client.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

/**
 * A scripted Nomad + Consul that records every call: enough to check what the driver
 * asks and in which order. The shared lifecycle suite runs the driver against the strict
 * fake cluster (test/nomad-lifecycle.test.ts); this one needs no containers.
 */
class ScriptedCluster {
  readonly calls: string[] = [];
  readonly jobs = new Map<string, Omit<JobRegisterRequest, 'Job'> & { Job: NomadJob; Version: number; JobModifyIndex: number }>();
  private modifyIndex = 10;
  readonly variables = new Map<string, NomadVariable>();
  allocations: AllocationListStub[] = [];
  checks: ConsulHealthCheck[] = [];
  consulIndex = 1;
  allocsIndex = 1;
  /** The watches' queries, kept apart from `calls` (they repeat on their own). */
  readonly watchQueries: string[] = [];
  refuseScale: string | null = null;
  /** Another registration lands between the driver's read of a job and its next registration of it. */
  registerInBetween = false;
  /** Nomad answers 500 to everything while set. */
  nomadDown = false;
  private parked: ServerResponse[] = [];
  private parkedAllocs: ServerResponse[] = [];
  private server!: Server;
  address = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => this.handle(request, body ? JSON.parse(body) : undefined, response));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.address = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Consul's checks changed: blocked queries return. */
  setChecks(checks: ConsulHealthCheck[]): void {
    this.checks = checks;
    this.consulIndex += 1;
    for (const response of this.parked.splice(0)) this.answerConsul(response);
  }

  /** Nomad's allocations changed: blocked queries return. */
  setAllocations(allocations: AllocationListStub[]): void {
    this.allocations = allocations;
    this.allocsIndex += 1;
    for (const response of this.parkedAllocs.splice(0)) this.answerAllocs(response);
  }

  async close(): Promise<void> {
    for (const response of [...this.parked.splice(0), ...this.parkedAllocs.splice(0)]) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private answerConsul(response: ServerResponse) {
    response.setHeader('X-Consul-Index', String(this.consulIndex));
    response.end(JSON.stringify(this.checks));
  }

  private answerAllocs(response: ServerResponse) {
    response.setHeader('X-Nomad-Index', String(this.allocsIndex));
    response.end(JSON.stringify(this.allocations));
  }

  private handle(request: IncomingMessage, body: any, response: ServerResponse) {
    const url = new URL(request.url!, 'http://x');
    const path = url.pathname;
    const json = (value: unknown, status = 200) => {
      response.statusCode = status;
      response.end(typeof value === 'string' ? value : JSON.stringify(value));
    };
    if (path === '/v1/health/state/any') {
      this.watchQueries.push(`consul ${url.search}`);
      if (Number(url.searchParams.get('index') ?? 0) >= this.consulIndex) return void this.parked.push(response);
      return this.answerConsul(response);
    }
    if (path === '/v1/status/leader' || path.startsWith('/v1/node/pool/')) return json('"ok"');
    if (path === '/v1/allocations') {
      this.watchQueries.push(`nomad ${url.search}`);
      if (this.nomadDown) return json('rpc error: No cluster leader', 500);
      if (Number(url.searchParams.get('index') ?? 0) >= this.allocsIndex) return void this.parkedAllocs.push(response);
      return this.answerAllocs(response);
    }
    this.calls.push(`${request.method} ${path}${url.searchParams.get('purge') ? '?purge=true' : ''}`);
    if (this.nomadDown) return json('rpc error: No cluster leader', 500);
    let match: RegExpExecArray | null;
    if ((match = /^\/v1\/var\/(.+)$/.exec(path))) {
      if (request.method === 'PUT') {
        this.variables.set(match[1]!, body);
        return json(body);
      }
      this.variables.delete(match[1]!);
      return json(null);
    }
    if (path === '/v1/jobs' && request.method === 'PUT') {
      const previous = this.jobs.get(body.Job.ID);
      if (this.registerInBetween && previous) {
        this.registerInBetween = false;
        previous.JobModifyIndex = this.modifyIndex += 1;
      }
      if (body.EnforceIndex && body.JobModifyIndex !== (previous?.JobModifyIndex ?? 0)) {
        return json(`Enforcing job modify index ${body.JobModifyIndex}: job exists with conflicting job modify index: ${previous?.JobModifyIndex}`, 500);
      }
      const count = body.PreserveCounts && previous ? previous.Job.TaskGroups[0]!.Count : body.Job.TaskGroups[0].Count;
      body.Job.TaskGroups[0].Count = count;
      this.modifyIndex += 1;
      this.jobs.set(body.Job.ID, { ...body, Version: previous ? previous.Version + 1 : 0, JobModifyIndex: this.modifyIndex });
      return json({ EvalID: 'eval-1', JobModifyIndex: this.modifyIndex, Warnings: '' });
    }
    if (path === '/v1/jobs') return json([...this.jobs.values()].map((j) => ({ ID: j.Job.ID, Name: j.Job.Name, Status: 'running', Version: j.Version })));
    if ((match = /^\/v1\/job\/([^/]+)\/allocations$/.exec(path))) return json(this.allocations.filter((a) => a.JobID === match![1]));
    if ((match = /^\/v1\/job\/([^/]+)\/scale$/.exec(path))) {
      const stored = this.jobs.get(match[1]!);
      if (this.refuseScale) return json(this.refuseScale, 400);
      const scale = body as ScalingRequest;
      stored!.Job.TaskGroups[0]!.Count = scale.Count;
      stored!.Version += 1;
      stored!.JobModifyIndex = this.modifyIndex += 1;
      return json({ EvalID: 'eval-2' });
    }
    if ((match = /^\/v1\/job\/([^/]+)$/.exec(path))) {
      const stored = this.jobs.get(match[1]!);
      if (request.method === 'DELETE') {
        this.jobs.delete(match[1]!);
        return json({ EvalID: 'eval-3' });
      }
      if (!stored) return json('job not found', 404);
      // The whole job, as Nomad answers it, with the fields its server sets.
      return json({ ...stored.Job, Version: stored.Version, JobModifyIndex: stored.JobModifyIndex, Stop: false, Status: 'running' });
    }
    json(`no route ${request.method} ${path}`, 404);
  }
}

const ALLOC = '9e4c8b3e-2d1f-4c1b-8c6e-0a1b2c3d4e5f';

describe('nomad driver: what it asks of Nomad and Consul', function () {
  this.timeout(20_000);
  let cluster: ScriptedCluster;
  let driver: NomadDriver;
  const changes: string[] = [];

  beforeEach(async () => {
    cluster = new ScriptedCluster();
    await cluster.start();
    const settings = defaultNomadSettings({ NOMAD_ADDR: cluster.address, CONSUL_HTTP_ADDR: cluster.address, NOMAD_WATCH_MIN_INTERVAL_MS: '50' });
    driver = new NomadDriver(nomadClient(settings.nomad, 2000, 2, 8), consulClient(settings.consul, 2000, 2, 8), { ...settings, consulWaitSeconds: 5, nomadWaitSeconds: 5 }, systemClock, pino({ level: 'silent' }));
    driver.onChange((agentId) => changes.push(agentId));
    driver.start();
  });
  afterEach(async () => {
    await driver.close();
    await cluster.close();
  });

  it('writes the secrets Variable before registering the job, and the job carries no secret', async () => {
    const spec = sampleSpec();
    await driver.submit(spec);
    assert.deepEqual(cluster.calls.slice(0, 2), ['PUT /v1/var/nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8', 'PUT /v1/jobs']);
    assert.deepEqual(cluster.variables.get('nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8'), { Namespace: 'default', Path: 'nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8', Items: spec.secretEnv });
    const registered = cluster.jobs.get('agent-agt_7Qm2XbR9kLp4TzW1nVc8')!;
    assert.equal(JSON.stringify(registered).includes(spec.secretEnv.OPENAI_API_KEY!), false);
    assert.equal(registered.PreserveCounts, true, 'auto-scaling on: a redeploy keeps the autoscaler’s count');
  });

  it('without secrets: no template, and a Variable left from an earlier version is deleted after registering', async () => {
    await driver.submit(sampleSpec());
    cluster.calls.length = 0;
    await driver.submit(sampleSpec({ version: 4, secretEnv: {}, scaling: { enabled: false, min: 1, max: 5 } }));
    assert.deepEqual(cluster.calls.slice(0, 2), ['PUT /v1/jobs', 'DELETE /v1/var/nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8']);
    assert.equal(cluster.variables.size, 0);
    const registered = cluster.jobs.get('agent-agt_7Qm2XbR9kLp4TzW1nVc8')!;
    assert.equal(registered.Job.TaskGroups[0]!.Tasks[0]!.Templates, undefined);
    assert.equal(registered.PreserveCounts, false, 'the count we hold is the count');
  });

  it('scales with the scale endpoint, and when Nomad refuses registers the job it holds with the count, secrets untouched', async () => {
    await driver.submit(sampleSpec({ count: 2 }));
    cluster.calls.length = 0;
    await driver.scale('agt_7Qm2XbR9kLp4TzW1nVc8', 3);
    assert.ok(cluster.calls.includes('POST /v1/job/agent-agt_7Qm2XbR9kLp4TzW1nVc8/scale'));
    assert.equal(cluster.jobs.get('agent-agt_7Qm2XbR9kLp4TzW1nVc8')!.Job.TaskGroups[0]!.Count, 3);

    cluster.refuseScale = 'job scaling blocked due to active deployment';
    cluster.calls.length = 0;
    await driver.scale('agt_7Qm2XbR9kLp4TzW1nVc8', 4);
    assert.deepEqual(cluster.calls.filter((c) => !c.startsWith('GET')), ['POST /v1/job/agent-agt_7Qm2XbR9kLp4TzW1nVc8/scale', 'PUT /v1/jobs']);
    const resubmitted = cluster.jobs.get('agent-agt_7Qm2XbR9kLp4TzW1nVc8')!;
    assert.equal(resubmitted.Job.TaskGroups[0]!.Count, 4);
    assert.deepEqual([resubmitted.EnforceIndex, resubmitted.PreserveCounts], [true, false], 'only over the job it read, as Job.Scale commits');

    // Registered by someone else after the driver read it: read again and registered over that (Job.EnforceIndex).
    cluster.registerInBetween = true;
    cluster.calls.length = 0;
    await driver.scale('agt_7Qm2XbR9kLp4TzW1nVc8', 5);
    const read = 'GET /v1/job/agent-agt_7Qm2XbR9kLp4TzW1nVc8';
    assert.deepEqual(cluster.calls, [read, 'POST /v1/job/agent-agt_7Qm2XbR9kLp4TzW1nVc8/scale', 'PUT /v1/jobs', read, 'PUT /v1/jobs', read], 'the conflict answered once (not retried as it is), then the job read again and registered over');
    assert.equal(cluster.jobs.get('agent-agt_7Qm2XbR9kLp4TzW1nVc8')!.Job.TaskGroups[0]!.Count, 5);

    cluster.calls.length = 0;
    await driver.scale('agt_7Qm2XbR9kLp4TzW1nVc8', 0);
    assert.deepEqual(cluster.calls.filter((c) => !c.startsWith('GET')), ['PUT /v1/jobs'], 'below Scaling.Min: registered at once');
    const group = cluster.jobs.get('agent-agt_7Qm2XbR9kLp4TzW1nVc8')!.Job.TaskGroups[0]!;
    assert.deepEqual([group.Count, group.Scaling.Min], [0, 0]);
  });

  it('removes with a purge and deletes the Variable', async () => {
    await driver.submit(sampleSpec());
    cluster.calls.length = 0;
    await driver.remove('agt_7Qm2XbR9kLp4TzW1nVc8');
    assert.deepEqual(cluster.calls, ['DELETE /v1/job/agent-agt_7Qm2XbR9kLp4TzW1nVc8?purge=true', 'DELETE /v1/var/nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8']);
    assert.equal(await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8'), null);
  });

  it('follows all agents with one allocations query and one Consul checks query, filtered to agent jobs and services', async () => {
    await driver.submit(sampleSpec());
    await driver.submit(sampleSpec({ agentId: 'agt_Other0000000000000000', slug: 'other-x1y2z3w4' }));
    await waitFor('both watches to query', async () => (cluster.watchQueries.some((q) => q.startsWith('nomad')) && cluster.watchQueries.some((q) => q.startsWith('consul')) ? true : undefined));
    const nomadQuery = new URLSearchParams(cluster.watchQueries.find((q) => q.startsWith('nomad'))!.slice('nomad '.length));
    assert.deepEqual([nomadQuery.get('filter'), nomadQuery.get('resources'), nomadQuery.get('task_states'), nomadQuery.get('namespace')], ['JobID matches "^agent-"', 'true', 'true', 'default']);
    const consulQuery = new URLSearchParams(cluster.watchQueries.find((q) => q.startsWith('consul'))!.slice('consul '.length));
    assert.equal(consulQuery.get('filter'), 'ServiceTags contains "platform-agent" or ServiceID is empty');
    assert.equal(cluster.calls.some((call) => call.includes('/allocations') || call.includes('/health/')), false, 'no per-agent reads');
  });

  it('reports a running replica with its address only once its Consul checks pass, and calls the listeners', async () => {
    await driver.submit(sampleSpec({ count: 1 }));
    cluster.setAllocations([{
      ID: ALLOC, Name: 'agent-agt_7Qm2XbR9kLp4TzW1nVc8.agent[0]', JobID: 'agent-agt_7Qm2XbR9kLp4TzW1nVc8', JobVersion: 0, TaskGroup: 'agent',
      ClientStatus: 'running', DesiredStatus: 'run', CreateTime: 1, ModifyTime: 1,
      AllocatedResources: { Shared: { Ports: [{ Label: 'http', Value: 24571, To: 8080, HostIP: '10.0.0.7' }] } },
      TaskStates: { agent: { State: 'running', Failed: false, Restarts: 0, StartedAt: new Date().toISOString(), FinishedAt: null, Events: [] } },
    }]);
    await waitFor('the allocation to be seen', async () => ((await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8'))!.replicas.length > 0 ? true : undefined));
    const starting = await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8');
    assert.deepEqual(starting!.replicas.map((r) => [r.state, r.address, r.version]), [['starting', null, 3]]);
    changes.length = 0;
    const serviceId = `_nomad-task-${ALLOC}-group-agent-agent-support-bot-x7k2p9qa-http`;
    const check = (Status: ConsulHealthCheck['Status']): ConsulHealthCheck => ({ Node: 'client-1', CheckID: `_nomad-check-${ALLOC}`, Name: 'health', Status, ServiceID: serviceId, ServiceName: 'agent-support-bot-x7k2p9qa', ServiceTags: ['platform-agent'] });
    cluster.setChecks([check('warning')]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8'))!.replicas[0]!.state, 'starting', 'a warning is not passing');
    cluster.setChecks([check('passing')]);
    await waitFor('the listeners to be called', async () => (changes.includes('agt_7Qm2XbR9kLp4TzW1nVc8') ? true : undefined));
    const running = await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8');
    assert.deepEqual(running!.replicas.map((r) => [r.state, r.address]), [['running', '10.0.0.7:24571']]);

    cluster.nomadDown = true;
    const whileDown = await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8');
    assert.deepEqual(whileDown!.replicas.map((r) => [r.state, r.address]), [['running', '10.0.0.7:24571']], 'Nomad down: the last allocations, Consul’s addresses');
  });

  it('reconciles: adopts a job at the same version without registering it, removes jobs of agents gone', async () => {
    await driver.submit(sampleSpec());
    await driver.submit(sampleSpec({ agentId: 'agt_Gone00000000000000000', secretEnv: {} }));
    cluster.calls.length = 0;
    await driver.reconcile([sampleSpec()]);
    assert.deepEqual(cluster.calls.filter((c) => !c.startsWith('GET')), ['DELETE /v1/job/agent-agt_Gone00000000000000000?purge=true', 'DELETE /v1/var/nomad/jobs/agent-agt_Gone00000000000000000']);
    assert.deepEqual([...cluster.jobs.keys()], ['agent-agt_7Qm2XbR9kLp4TzW1nVc8']);
    assert.notEqual(await driver.status('agt_7Qm2XbR9kLp4TzW1nVc8'), null);
  });
});
