import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { createAdmission } from '../authz/admission.js';
import { loadAuthzConfig } from '../authz/config.js';
import { denialOf, startTestAuthz, uniqueAgentDomain, type DecodedCheckResponse } from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';

/** Issue 13 item 6: past its bounds authz sheds Checks as 503 denials instead of failing them all. */
describe('authz under overload', () => {
  describe('admission (in-flight bound, queue, shedding)', () => {
    it('runs up to maxInFlight at once, queues up to maxQueued in order, and sheds the rest', async () => {
      const admit = createAdmission({ maxInFlight: 2, maxQueued: 1 });
      const releases: (() => void)[] = [];
      const started: number[] = [];
      const job = (id: number) => () => {
        started.push(id);
        return new Promise<number>((resolve) => releases.push(() => resolve(id)));
      };
      const first = admit(job(1));
      const second = admit(job(2));
      const queued = admit(job(3));
      assert.equal(admit(job(4)), 'shed');
      assert.deepEqual(started, [1, 2]);
      releases[0]!();
      assert.equal(await first, 1);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(started, [1, 2, 3], 'the queued job takes the freed slot');
      assert.equal(admit(job(5)) === 'shed', false, 'the queue has room again');
      releases[1]!();
      releases[2]!();
      assert.equal(await second, 2);
      assert.equal(await queued, 3);
    });

    it('frees the slot of a job that fails', async () => {
      const admit = createAdmission({ maxInFlight: 1, maxQueued: 0 });
      await assert.rejects(admit(() => Promise.reject(new Error('boom'))) as Promise<never>, /boom/);
      assert.equal(await admit(() => Promise.resolve('next')), 'next');
    });
  });

  describe('settings', () => {
    it('defaults to 256 in flight and 1,024 queued, and reports bad values by name', () => {
      const config = loadAuthzConfig({ REDIS_URL: 'redis://127.0.0.1:6379', AUTHZ_GRPC_SOCKET: '/run/agent-platform/authz.sock' });
      assert.equal(config.maxInFlight, 256);
      assert.equal(config.maxQueued, 1024);
      assert.throws(
        () => loadAuthzConfig({ REDIS_URL: 'redis://127.0.0.1:6379', AUTHZ_GRPC_SOCKET: '/run/agent-platform/authz.sock', AUTHZ_MAX_IN_FLIGHT: '0', AUTHZ_MAX_QUEUED: 'lots' }),
        (error: Error) => /AUTHZ_MAX_IN_FLIGHT: expected an integer from 1/.test(error.message) && /AUTHZ_MAX_QUEUED: expected an integer from 0/.test(error.message),
      );
    });
  });

  describeOnEachAuthzServer('through gRPC, as Envoy calls it', (server) => {
    const clock = new ManualClock(new Date('2031-03-04T05:06:30.000Z'));
    const domain = uniqueAgentDomain('authz-overload');

    it('sheds Checks past the queue as a 503 denial with Retry-After (never a gRPC error), and a queued Check still gets Redis\'s answer', async () => {
      // Redis replies to no script until it has received two: the first Check
      // misses its deadline, and only then does the queued one reach Redis.
      const redisServer = await startHoldingRedis(2);
      const redis = new Redis(redisServer.port, '127.0.0.1', { enableReadyCheck: false, maxRetriesPerRequest: 1 });
      redis.on('error', () => undefined);
      const authz = await startTestAuthz({ redis, clock, agentDomain: domain, redisTimeoutMs: 500, maxInFlight: 1, maxQueued: 1, server });
      try {
        const answers = await Promise.all([1, 2, 3, 4].map(() => authz.client.check({ host: `bench.${domain}` })));
        const shed = answers.filter((answer) => answer.denied_response?.body.includes('overloaded'));
        assert.equal(shed.length, 2, JSON.stringify(answers));
        for (const answer of shed) {
          const denial = denialOf(answer);
          assert.equal(denial.httpStatus, 'ServiceUnavailable');
          assert.equal(denial.grpcCode, GrpcStatus.UNAVAILABLE);
          assert.deepEqual(denial.headers, { 'content-type': 'text/plain', 'retry-after': '1' });
          assert.equal(denial.body, 'service unavailable: the edge is overloaded, retry shortly\n');
        }
        const others = answers.filter((answer) => !shed.includes(answer));
        // The queued Check waited a whole deadline for its slot and is still answered by
        // Redis: its deadline starts when it is sent, not when it arrived.
        assert.deepEqual(others.map(outcomeOf).sort(), ['allowed', 'unavailable']);
        assert.equal(redisServer.commands(), 2, 'shed Checks never reach Redis');
        const metrics = await (await fetch(`http://127.0.0.1:${authz.authz.metricsPort}/metrics`)).text();
        assert.match(metrics, /^agent_platform_authz_checks_total\{decision="denied",reason="overloaded"\} 2$/m);
      } finally {
        await authz.close();
        redis.disconnect();
        await redisServer.close();
      }
    });
  });
});

function outcomeOf(answer: DecodedCheckResponse): string {
  if (answer.status.code === GrpcStatus.OK) return 'allowed';
  return denialOf(answer).body.startsWith('service unavailable: the edge cannot check') ? 'unavailable' : JSON.stringify(answer);
}

/**
 * A Redis that holds every reply until it has received `holdUntil` script commands, then
 * sends them all in order, each answering the check script with `allowed`. Speaks just enough
 * RESP for ioredis (no ready check): commands are arrays of bulk strings.
 */
async function startHoldingRedis(holdUntil: number): Promise<{ port: number; commands(): number; close(): Promise<void> }> {
  const reply = '*3\r\n$7\r\nallowed\r\n$10\r\nagt_queued\r\n$13\r\n10.9.0.1:8080\r\n';
  const sockets = new Set<Socket>();
  let received = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    let held = 0;
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (let command = takeCommand(buffered); command !== null; command = takeCommand(buffered)) {
        const isScript = /^\*\d+\r\n\$\d+\r\nEVAL/i.test(buffered);
        buffered = buffered.slice(command);
        if (!isScript) {
          // ioredis's own set-up (CLIENT SETINFO and the like) is answered at once, in order.
          if (held === 0) socket.write('+OK\r\n');
          continue;
        }
        received += 1;
        held += 1;
        if (received >= holdUntil) {
          socket.write(reply.repeat(held));
          held = 0;
        }
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    commands: () => received,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The length of the first complete RESP array of bulk strings in `text`, or null. */
function takeCommand(text: string): number | null {
  const header = /^\*(\d+)\r\n/.exec(text);
  if (!header) return null;
  let offset = header[0].length;
  for (let i = 0; i < Number(header[1]); i += 1) {
    const bulk = /^\$(\d+)\r\n/.exec(text.slice(offset));
    if (!bulk) return null;
    offset += bulk[0].length + Number(bulk[1]) + 2;
    if (offset > text.length) return null;
  }
  return offset;
}
