import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { buildControl, type Control } from '../control/compose.js';
import { inMemoryDriver } from './support/in-memory-driver.js';
import { createLimitedServer } from '../control/http/client-limits.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { parseSamples, sampleValue } from './support/prometheus-text.js';
import { openRawClient } from './support/slow-client.js';
import { waitFor } from './support/wait.js';

/**
 * Issue 31 item 5: a client that cuts its body short has abandoned its request; that is
 * no failure of the control API. It is counted under status 499 (nginx's "client closed
 * request") and logged at info, never as a 500 or an error line anyone could inflate.
 */
describe('control API: a request the client abandons', () => {
  let control: TestControl;
  let observed: Control;
  let server: Server;
  let port = 0;
  const lines: { level: number; msg: string; status?: number; path?: string }[] = [];

  before(async () => {
    control = await startControl();
    // The harness's control logs nowhere; this one, on the same database and Redis, logs to `lines`.
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    observed = buildControl({ config: control.config, db: control.db, redis: control.redis, clock: control.clock, logger, driver: inMemoryDriver() });
    server = createLimitedServer(control.config.clientLimits, observed.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await control?.close();
  });

  const counted = async (status: string) =>
    sampleValue(parseSamples(await observed.metrics.registry.metrics()), 'agent_platform_control_http_requests_total', { method: 'POST', route: '/v1/auth/login', code: status }) ?? 0;

  /** Sends a POST whose Content-Length promises more than is sent, then closes as `close` does; returns what came back. */
  async function abandon(close: 'end' | 'destroy'): Promise<string> {
    const client = await openRawClient(port);
    const partial = '{"email":"someone@example.com","pass';
    client.socket.write(`POST /v1/auth/login HTTP/1.1\r\nHost: control\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n${partial}`);
    // Let the request reach the body reader first (were it later, the reader would throw the same abort).
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (close === 'end') {
      client.socket.end();
      await client.closed;
    } else {
      client.socket.destroy();
    }
    return client.received();
  }

  it('counts a body cut short, by a half-close or a reset, as 499 and never 500, logging nothing at error level', async () => {
    const before = { aborted: await counted('499'), failed: await counted('500') };
    const halfClosed = await abandon('end');
    // Node's HTTP parser answers an incomplete body, before the app sees the abort; the app then sends nothing more.
    assert.match(halfClosed, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.doesNotMatch(halfClosed, /HTTP\/1\.1 4\d\d[\s\S]*HTTP\/1\.1/, 'one answer only');
    await abandon('destroy');

    await waitFor('two requests counted as 499', async () => ((await counted('499')) === before.aborted + 2 ? true : undefined), 5_000, 20);
    assert.equal(await counted('500'), before.failed);
    const errors = lines.filter((line) => line.level >= 50);
    assert.deepEqual(errors, [], 'an abandoned request logs no error');
    const requests = lines.filter((line) => line.msg === 'request' && line.path === '/v1/auth/login');
    assert.equal(requests.length, 2);
    for (const line of requests) {
      assert.equal(line.status, 499);
      assert.equal(line.level, 30, 'logged at info');
    }
  });

  it('still answers a complete request on the same route as before (the 499 is for aborts only)', async () => {
    const client = await openRawClient(port);
    const body = '{"email":"nobody@example.com","password":"not the password"}';
    client.socket.write(`POST /v1/auth/login HTTP/1.1\r\nHost: control\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    await client.closed;
    assert.match(client.received(), /^HTTP\/1\.1 401 /);
  });
});
