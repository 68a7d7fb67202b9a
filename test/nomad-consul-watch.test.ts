import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { ConsulServiceEntry } from '../control/orchestrator/nomad/api-types.js';
import { allocationOf, ConsulHealthWatch, type PassingInstances } from '../control/orchestrator/nomad/consul-watch.js';
import { ApiClient } from '../control/orchestrator/nomad/http-client.js';
import { waitFor } from './support/wait.js';

const ALLOC = '9e4c8b3e-2d1f-4c1b-8c6e-0a1b2c3d4e5f';
const entry = (alloc: string, port: number): ConsulServiceEntry => ({
  Node: { Node: 'client-1', Address: '10.0.0.7' },
  Service: { ID: `_nomad-task-${alloc}-group-agent-agent-ag_1-http`, Service: 'agent-ag_1', Tags: ['agent-id=ag_1'], Address: '10.0.0.7', Port: port },
  Checks: [{ CheckID: 'serfHealth', Status: 'passing', ServiceID: '' }],
});

describe('nomad driver: the Consul health watch', function () {
  this.timeout(20_000);
  let server: Server;
  let address: string;
  const queries: { index: string | null; passing: string | null; token: string | undefined }[] = [];
  /** What the next queries answer: a status and, for 200, the entries and index. */
  let answers: ({ status: 500 } | { status: 200; index: number; entries: ConsulServiceEntry[] })[] = [];
  let parked: ServerResponse[] = [];

  before(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url!, 'http://x');
      queries.push({ index: url.searchParams.get('index'), passing: url.searchParams.get('passing'), token: request.headers['x-consul-token'] as string | undefined });
      const answer = answers.shift();
      if (!answer) return void parked.push(response); // a blocking query with nothing new
      if (answer.status === 500) {
        response.statusCode = 500;
        return void response.end('rpc error making call: No cluster leader');
      }
      response.setHeader('X-Consul-Index', String(answer.index));
      response.end(JSON.stringify(answer.entries));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('reads the allocation id from the service id Nomad registers', () => {
    assert.equal(allocationOf(`_nomad-task-${ALLOC}-group-agent-agent-ag_1-http`), ALLOC);
    assert.equal(allocationOf('web-1'), null);
  });

  it('follows passing instances with the index, and resumes with the same index after Consul fails', async () => {
    queries.length = 0;
    parked = [];
    answers = [
      { status: 200, index: 41, entries: [] },
      { status: 200, index: 42, entries: [entry(ALLOC, 24571)] },
      { status: 500 },
      { status: 500 },
      { status: 500 },
    ];
    const consul = new ApiClient(
      { address, token: 'consul-token', ca: null, cert: null, key: null, skipVerify: false },
      { api: 'Consul', tokenHeader: 'X-Consul-Token', timeoutMs: 5000, attempts: 1 },
    );
    const seen: PassingInstances[] = [];
    const watch = new ConsulHealthWatch(consul, 'agent-ag_1', { waitSeconds: 5, backoffMs: 20, maxBackoffMs: 50 }, (passing) => seen.push(passing), pino({ level: 'silent' })).start();
    try {
      await waitFor('the instance', async () => (watch.passing.get(ALLOC) ? true : undefined));
      assert.deepEqual([...watch.passing], [[ALLOC, '10.0.0.7:24571']]);
      await waitFor('three failed queries and the next one', async () => (queries.length >= 6 ? true : undefined));
      assert.deepEqual(queries.map((q) => q.index), [null, '41', '42', '42', '42', '42'], 'no index lost: the failures resume from 42');
      assert.ok(queries.every((q) => q.passing === 'true' && q.token === 'consul-token'));
      assert.deepEqual([...watch.passing], [[ALLOC, '10.0.0.7:24571']], 'a failing Consul does not empty the routing set');
      parked.shift()?.writeHead(200, { 'X-Consul-Index': '43' }).end('[]');
      await waitFor('the instance to go', async () => (watch.passing.size === 0 ? true : undefined));
      assert.deepEqual(seen.map((passing) => passing.size), [1, 0], 'listeners are called on changes only');
    } finally {
      await watch.stop();
      for (const response of parked) response.destroy();
    }
  });
});
