import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { CONNECTIONS_CHECKING_INTERVAL_MS } from '../control/http/client-limits.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { connectTestRedis, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { openRawClient, trickleHeadersUntilClosed } from './support/slow-client.js';
import { LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';

/**
 * Issue 13 item 7 with real sockets: clients that trickle headers are cut off, and one
 * address cannot hold more connections than its cap, on the local edge and the control
 * API alike. The mocha timeout is the bound: headers timeout + checking interval + slack.
 */
const HEADERS_TIMEOUT_MS = 1_000;
const SLOWLORIS_BOUND_MS = HEADERS_TIMEOUT_MS + CONNECTIONS_CHECKING_INTERVAL_MS + 3_000;
const CAP = 3;

interface Target {
  port(): number;
}

function describeClientLimits(name: string, target: Target): void {
  describe(name, () => {
    it('closes 20 connections that send one header byte every 200 ms, answering 408', async function () {
      this.timeout(SLOWLORIS_BOUND_MS);
      // From 20 addresses, so the per-address cap plays no part.
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => trickleHeadersUntilClosed(target.port(), 200, `127.0.2.${i + 1}`)));
      for (const answer of answers) assert.match(answer, /^HTTP\/1\.1 408 /);
    });

    it(`closes the connection past ${CAP} from one address at once, while other addresses still connect`, async () => {
      const held = await Promise.all(Array.from({ length: CAP }, () => openRawClient(target.port(), '127.0.0.3')));
      try {
        const extra = await openRawClient(target.port(), '127.0.0.3');
        await extra.closed;
        assert.equal(extra.received(), '', 'refused without an answer');

        const other = await openRawClient(target.port(), '127.0.0.4');
        other.socket.write('GET /nothing-here HTTP/1.1\r\nHost: limits.example\r\nConnection: close\r\n\r\n');
        await other.closed;
        assert.match(other.received(), /^HTTP\/1\.1 \d{3} /, 'another address is answered');

        // A freed slot is usable again, once the server has seen the close.
        held.pop()!.socket.destroy();
        let answer = '';
        while (answer === '') {
          const again = await openRawClient(target.port(), '127.0.0.3');
          again.socket.write('GET /nothing-here HTTP/1.1\r\nHost: limits.example\r\nConnection: close\r\n\r\n');
          await again.closed;
          answer = again.received();
        }
        assert.match(answer, /^HTTP\/1\.1 \d{3} /);
      } finally {
        for (const client of held) client.socket.destroy();
      }
    });
  });
}

describe('slow clients and connections per address', () => {
  const limits = { CONTROL_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), CONTROL_MAX_CONNECTIONS_PER_ADDRESS: String(CAP) };
  let control: TestControl;
  let redis: Redis;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;

  before(async () => {
    control = await startControl(limits);
    redis = connectTestRedis();
    authz = await startTestAuthz({ redis, clock: new ManualClock(new Date()), agentDomain: uniqueAgentDomain('client-limits') });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS,
      port: 0,
      authzAddress: authz.authz.grpcAddress,
      clientLimits: { headersTimeoutMs: HEADERS_TIMEOUT_MS, maxConnectionsPerAddress: CAP },
    });
  });

  after(async () => {
    await edge?.close();
    await authz?.close();
    redis?.disconnect();
    await control?.close();
  });

  describeClientLimits('local edge', { port: () => edge.port });
  describeClientLimits('control API', { port: () => Number(new URL(control.baseUrl).port) });
});
