import { Redis } from 'ioredis';
import { pino } from 'pino';
import { systemClock } from '../../contract/clock.js';
import { isUnixSocket, type GrpcTarget } from '../../contract/grpc-target.js';
import { loadAuthzConfig } from '../../authz/config.js';
import { createGrpcServer, type GrpcCallback, type GrpcServer } from '../../authz/grpc-server.js';
import type { Http2Limits } from '../../authz/http2/limits.js';
import { startAuthz } from '../../authz/server.js';
import { loadAuthorizationService } from '../../proto/load.js';

/**
 * authz in a process of its own, for test/authz-http2-attacks.test.ts and
 * test/authz-http2-fuzz.test.ts: the attacker's memory is then not the server's. Started by
 * test/support/attacked-authz.ts with `node --import tsx --expose-gc` and IPC; it reports
 * its port, answers memory questions (after a full GC, or without one for a sample), and
 * reports an uncaught exception before it dies of it.
 *
 * `authz`: startAuthz, the real service with Redis, as AUTHZ_WORKERS=1 runs it.
 * `allow-all`: authz's gRPC server (createGrpcServer) with a Check that allows everything,
 * for the bounds only tests can shorten (createGrpcServer's `limits`, e.g. the timeouts).
 */
export interface UnderAttackOptions {
  server: 'authz' | 'allow-all';
  redisUrl: string;
  redisKeyPrefix: string;
  agentDomain: string;
  limits?: Partial<Http2Limits>;
}

export type ToChild = { type: 'memory'; id: number; gc: boolean } | { type: 'stop' };
export type FromChild =
  | { type: 'listening'; port: number }
  | { type: 'memory'; id: number; rss: number; heapUsed: number; external: number; arrayBuffers: number }
  | { type: 'uncaught'; error: string };

const options = JSON.parse(process.argv[2] ?? '{}') as UnderAttackOptions;
const report = (message: FromChild) => process.send?.(message);

for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.on(event, (error: unknown) => {
    report({ type: 'uncaught', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    // Dies as it would have, once the report is on its way.
    setTimeout(() => process.exit(70), 50);
  });
}

const { port, stop } = options.server === 'authz' ? await startRealAuthz() : await startAllowAll();
report({ type: 'listening', port });

process.on('message', (message: ToChild) => {
  if (message.type === 'stop') {
    void stop().finally(() => process.exit(0));
    return;
  }
  if (message.gc) {
    // Twice: the first pass may leave what finalizers release for the second.
    globalThis.gc?.();
    globalThis.gc?.();
  }
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  report({ type: 'memory', id: message.id, rss, heapUsed, external, arrayBuffers });
});
process.on('disconnect', () => process.exit(0));

function portOf(target: GrpcTarget): number {
  if (isUnixSocket(target)) throw new Error('expected authz on a TCP port');
  return target.port;
}

async function startRealAuthz(): Promise<{ port: number; stop: () => Promise<void> }> {
  const config = loadAuthzConfig({
    REDIS_URL: options.redisUrl,
    REDIS_KEY_PREFIX: options.redisKeyPrefix,
    AGENT_DOMAIN: options.agentDomain,
    AUTHZ_GRPC_LISTEN: '127.0.0.1:0',
    AUTHZ_METRICS_PORT: '0',
    AUTHZ_WORKERS: '1',
    // The attacker, this process and Redis share two cores: a 100 ms deadline would measure
    // the machine. A server that stalls its event loop for a second still fails the Checks.
    AUTHZ_REDIS_TIMEOUT_MS: '1000',
  });
  const redis = new Redis(config.redisUrl, { keyPrefix: config.redisKeyPrefix, maxRetriesPerRequest: 1, enableAutoPipelining: false });
  const authz = await startAuthz(config, { redis, clock: systemClock, logger: pino({ level: 'silent' }) }, { serveOps: false });
  return {
    port: portOf(authz.grpcTarget),
    stop: async () => {
      await authz.close();
      redis.disconnect();
    },
  };
}

async function startAllowAll(): Promise<{ port: number; stop: () => Promise<void> }> {
  const server: GrpcServer = createGrpcServer({ limits: options.limits });
  server.addService(loadAuthorizationService().service, {
    Check: (_call: unknown, callback: GrpcCallback<object>) => callback(null, { status: { code: 0 }, ok_response: {} }),
  });
  const bound = await server.listen({ host: '127.0.0.1', port: 0 });
  return { port: portOf(bound), stop: () => server.shutdown(1_000) };
}
