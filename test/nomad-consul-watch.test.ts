import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import type { ConsulHealthCheck } from '../control/orchestrator/nomad/api-types.js';
import { nextIndex } from '../control/orchestrator/nomad/blocking-watch.js';
import { allocationOf, consulChecksWatch, passingFrom, type PassingAllocations } from '../control/orchestrator/nomad/consul-watch.js';
import { ApiClient } from '../control/orchestrator/nomad/http-client.js';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

const ALLOC = '9e4c8b3e-2d1f-4c1b-8c6e-0a1b2c3d4e5f';
const OTHER = '1f2e3d4c-5b6a-4789-8abc-def012345678';
const check = (alloc: string, name: string, Status: ConsulHealthCheck['Status']): ConsulHealthCheck => ({
  Node: 'client-1',
  CheckID: `_nomad-check-${alloc}-${name}`,
  Name: name,
  Status,
  ServiceID: `_nomad-task-${alloc}-group-agent-agent-support-bot-x7k2p9qa-http`,
  ServiceName: 'agent-support-bot-x7k2p9qa',
  ServiceTags: ['platform-agent'],
});

describe('nomad driver: the Consul checks watch', function () {
  this.timeout(20_000);
  let server: Server;
  let address: string;
  const queries: { index: string | null; filter: string | null; token: string | undefined }[] = [];
  /** What the next queries answer: a status and, for 200, the checks and index. */
  let answers: ({ status: 500 } | { status: 200; index: number; checks: ConsulHealthCheck[] })[] = [];
  let parked: ServerResponse[] = [];

  before(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url!, 'http://x');
      queries.push({ index: url.searchParams.get('index'), filter: url.searchParams.get('filter'), token: request.headers['x-consul-token'] as string | undefined });
      const answer = answers.shift();
      if (!answer) return void parked.push(response); // a blocking query with nothing new
      if (answer.status === 500) {
        response.statusCode = 500;
        return void response.end('rpc error making call: No cluster leader');
      }
      response.setHeader('X-Consul-Index', String(answer.index));
      response.end(JSON.stringify(answer.checks));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const consul = () =>
    new ApiClient(
      { address, token: 'consul-token', ca: null, cert: null, key: null, skipVerify: false },
      { api: 'Consul', tokenHeader: 'X-Consul-Token', timeoutMs: 5000, attempts: 1, maxConnections: 4 },
    );

  it('reads the allocation id from the service id Nomad registers', () => {
    assert.equal(allocationOf(`_nomad-task-${ALLOC}-group-agent-agent-support-bot-x7k2p9qa-http`), ALLOC);
    assert.equal(allocationOf('web-1'), null);
  });

  it('counts an allocation as passing only when every check of its service passes', () => {
    const passing = passingFrom([check(ALLOC, 'health', 'passing'), check(OTHER, 'health', 'passing'), check(OTHER, 'port', 'warning')]);
    assert.deepEqual([...passing], [ALLOC]);
  });

  it("counts its node's checks too, as ?passing does: an allocation on a node whose serfHealth is not passing is not", () => {
    const node = (Node: string, Status: ConsulHealthCheck['Status']): ConsulHealthCheck => ({ Node, CheckID: 'serfHealth', Name: 'Serf Health Status', Status, ServiceID: '', ServiceName: '', ServiceTags: [] });
    const onOtherNode = { ...check(OTHER, 'health', 'passing'), Node: 'client-2' };
    assert.deepEqual([...passingFrom([node('client-1', 'passing'), node('client-2', 'critical'), check(ALLOC, 'health', 'passing'), onOtherNode])], [ALLOC]);
    assert.deepEqual([...passingFrom([node('client-1', 'warning'), check(ALLOC, 'health', 'passing'), onOtherNode])], [OTHER], 'a warning is not passing');
    assert.deepEqual([...passingFrom([node('client-1', 'passing'), check(ALLOC, 'health', 'passing')])], [ALLOC]);
  });

  it('follows the index as Consul asks: backwards starts over, and it never goes below 1', () => {
    assert.equal(nextIndex(0, 41), 41);
    assert.equal(nextIndex(41, 42), 42);
    assert.equal(nextIndex(42, 7), 1, 'a restored or new Consul: read afresh (index 1 answers at once)');
    assert.equal(nextIndex(0, 0), 1, 'index=0 never blocks: clamped so the watch cannot spin');
    assert.equal(nextIndex(5, Number.NaN), 1);
  });

  it('follows every agent check with one filtered query, resumes with the same index after Consul fails, and never queries faster than its interval', async () => {
    queries.length = 0;
    parked = [];
    answers = [
      { status: 200, index: 41, checks: [] },
      { status: 200, index: 42, checks: [check(ALLOC, 'health', 'passing')] },
      { status: 500 },
      { status: 500 },
      { status: 500 },
      { status: 200, index: 0, checks: [check(ALLOC, 'health', 'passing')] },
    ];
    const seen: PassingAllocations[] = [];
    // When the watch starts each query, seen from the client: the server's arrival times
    // would add the connection's own delays, which a loaded machine makes uneven.
    const client = consul();
    const startedAt: number[] = [];
    const request = client.request.bind(client);
    client.request = ((...args: Parameters<typeof request>) => (startedAt.push(performance.now()), request(...args))) as typeof client.request;
    const watch = consulChecksWatch(client, { waitSeconds: 5, minIntervalMs: 150, backoffMs: 20, maxBackoffMs: 50 }, (passing) => seen.push(passing), pino({ level: 'silent' })).start();
    try {
      await waitFor('the failures and the answers after them', async () => (queries.length >= 7 ? true : undefined));
      assert.deepEqual(queries.map((q) => q.index), [null, '41', '42', '42', '42', '42', '1'], 'no index lost across failures; a 0 index is clamped to 1');
      assert.ok(queries.every((q) => q.filter === 'ServiceTags contains "platform-agent" or ServiceID is empty' && q.token === 'consul-token'));
      // A lower bound, which load can only lengthen: the two answers that came at once were
      // each followed by the rest of the interval (a timer may fire up to a millisecond or two early of performance.now()).
      const gaps = startedAt.slice(1, 3).map((at, i) => at - startedAt[i]!);
      assert.ok(gaps.every((gap) => gap >= 148), `answers at once still wait the interval: ${gaps.map(Math.round).join(', ')} ms`);
      assert.deepEqual(seen.map((passing) => [...passing]), [[ALLOC]], 'listeners are called on changes only, and a failing Consul keeps the set');
      parked.shift()?.writeHead(200, { 'X-Consul-Index': '43' }).end('[]');
      await waitFor('the allocation to go', async () => (seen.length === 2 ? true : undefined));
      assert.equal(seen[1]!.size, 0);
    } finally {
      await watch.stop();
      for (const response of parked) response.destroy();
    }
  });
});

describe("nomad driver: a node Consul sees as dead (fake Consul's serfHealth)", function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  let driver: NomadDriver;
  const spec = sampleSpec({ agentId: 'agt_DeadNode000000000001', slug: 'dead-node-x7k2p9qa', count: 1, secretEnv: {} });

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    driver = fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '50' });
    driver.start();
  });
  after(async () => {
    await driver?.close();
    await cluster?.close();
  });

  const states = async () => (await driver.status(spec.agentId))?.replicas.map((replica) => replica.state) ?? [];

  it('stops routing to its replicas as soon as serfHealth is critical, though Nomad still has them running, and routes again when it passes', async () => {
    await driver.submit(spec);
    await waitFor('the replica routable', async () => ((await states()).join() === 'running' ? true : undefined), 30_000);
    cluster.setNodeAlive(false);
    await waitFor('the replica out of the routing set', async () => ((await states()).join() === 'starting' ? true : undefined), 10_000);
    assert.deepEqual(cluster.allocations(`agent-${spec.agentId}`).map((a) => a.ClientStatus), ['running'], 'Nomad has not marked it lost');
    cluster.setNodeAlive(true);
    await waitFor('the replica routable again', async () => ((await states()).join() === 'running' ? true : undefined), 10_000);
  });
});
