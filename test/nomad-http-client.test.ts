import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient, ApiError, ApiUnreachableError } from '../control/orchestrator/nomad/http-client.js';

describe('nomad driver: the HTTP client', () => {
  let server: Server;
  let address: string;
  let handler: (request: IncomingMessage, response: ServerResponse) => void;
  const seen: { method: string; url: string; token: string | undefined; body: string }[] = [];

  before(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        seen.push({ method: request.method!, url: request.url!, token: request.headers['x-nomad-token'] as string | undefined, body });
        handler(request, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => (seen.length = 0));

  const client = (overrides: Partial<{ timeoutMs: number; attempts: number; address: string }> = {}) =>
    new ApiClient(
      { address: overrides.address ?? address, token: 'nomad-secret-token', ca: null, cert: null, key: null, skipVerify: false },
      { api: 'Nomad', tokenHeader: 'X-Nomad-Token', timeoutMs: overrides.timeoutMs ?? 2000, attempts: overrides.attempts ?? 3, backoffMs: 10, maxConnections: 8 },
    );

  it('sends the token header, the query and a JSON body, and parses the answer', async () => {
    handler = (_request, response) => response.end(JSON.stringify({ EvalID: 'e1' }));
    const answer = await client().json<{ EvalID: string }>('PUT', '/v1/jobs', { query: { namespace: 'agents', region: undefined }, body: { Job: { ID: 'agent-x' } } });
    assert.deepEqual(answer, { EvalID: 'e1' });
    assert.deepEqual(seen, [{ method: 'PUT', url: '/v1/jobs?namespace=agents', token: 'nomad-secret-token', body: '{"Job":{"ID":"agent-x"}}' }]);
  });

  it('retries a 5xx with back-off and succeeds within its attempts', async () => {
    let calls = 0;
    handler = (_request, response) => {
      calls += 1;
      if (calls < 3) {
        response.statusCode = 500;
        response.end('rpc error: No cluster leader');
      } else response.end('[]');
    };
    assert.deepEqual(await client().json('GET', '/v1/jobs'), []);
    assert.equal(seen.length, 3);
  });

  it("gives up after its attempts with Nomad's own message", async () => {
    handler = (_request, response) => {
      response.statusCode = 503;
      response.end('rpc error: No cluster leader');
    };
    await assert.rejects(client({ attempts: 2 }).json('GET', '/v1/jobs'), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 503);
      assert.match(error.message, /No cluster leader/);
      return true;
    });
    assert.equal(seen.length, 2);
  });

  it('never retries a 4xx, whose answer will not change', async () => {
    handler = (_request, response) => {
      response.statusCode = 400;
      response.end('job scaling blocked due to active deployment');
    };
    await assert.rejects(client().json('POST', '/v1/job/agent-x/scale', { body: {} }), /400 job scaling blocked due to active deployment/);
    assert.equal(seen.length, 1);
  });

  it('never retries a job Nomad\'s validators refuse (a 500 with a go-multierror list), but retries a 429 past the connection limit', async () => {
    handler = (_request, response) => {
      response.statusCode = 500;
      response.end('1 error occurred:\n\t* Task group agent validation failed: 1 error occurred:\n\t* Service name must be valid per RFC 1123\n\n');
    };
    await assert.rejects(client().json('PUT', '/v1/jobs', { body: {} }), /500 1 error occurred/);
    assert.equal(seen.length, 1, 'the same job would be refused again');

    seen.length = 0;
    let calls = 0;
    handler = (_request, response) => {
      calls += 1;
      if (calls === 1) {
        response.writeHead(429, { connection: 'close' });
        response.end('Your IP is issuing too many concurrent connections, please rate limit your calls\n');
      } else response.end('[]');
    };
    assert.deepEqual(await client().json('GET', '/v1/jobs'), []);
    assert.equal(seen.length, 2);
  });

  it('turns a 404 into null when asked', async () => {
    handler = (_request, response) => {
      response.statusCode = 404;
      response.end('job not found');
    };
    assert.equal(await client().json('GET', '/v1/job/agent-x', { allowNotFound: true }), null);
    await assert.rejects(client().json('GET', '/v1/job/agent-x'), ApiError);
  });

  it('times out a request that hangs, retries it, and reports the API unreachable', async () => {
    handler = () => undefined; // never answers
    await assert.rejects(client({ timeoutMs: 150, attempts: 2 }).json('GET', '/v1/jobs'), (error: unknown) => {
      assert.ok(error instanceof ApiUnreachableError);
      assert.match(error.message, /Nomad GET \/v1\/jobs: unreachable/);
      return true;
    });
    assert.equal(seen.length, 2, 'the second attempt was made after the first timed out');
  });

  it('retries a refused connection and reports it unreachable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(client({ address: `http://127.0.0.1:${port}`, attempts: 2 }).json('GET', '/v1/jobs'), ApiUnreachableError);
  });
});
