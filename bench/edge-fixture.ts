import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { edgeAgentHash, edgeKeyNames } from '../contract/edge-keys.js';
import { freePort, startRedis } from '../scripts/lib/local-services.js';

/** What the edge benchmarks run against: a throwaway Redis, one replica answering "ok", and its agent in the projection. */
export interface EdgeFixture {
  redisUrl: string;
  redis: Redis;
  replicaPort: number;
  stop(): Promise<void>;
}

/**
 * A public agent `slug` whose limits never bite, so every Check runs all its steps and
 * allows, routed to a local replica.
 */
export async function startEdgeFixture(name: string, slug: string): Promise<EdgeFixture> {
  const workDir = mkdtempSync(join(tmpdir(), `${name}-`));
  chmodSync(workDir, 0o755);
  const redisService = await startRedis({ dataDir: join(workDir, 'redis'), port: await freePort(), persistent: false });
  const redis = new Redis(redisService.url);
  const replica = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'));
  replica.keepAliveTimeout = 10_000;
  replica.listen(0, '127.0.0.1');
  await new Promise((resolve) => replica.once('listening', resolve));
  const replicaPort = (replica.address() as AddressInfo).port;
  await registerAgent(redis, slug, `127.0.0.1:${replicaPort}`);
  return {
    redisUrl: redisService.url,
    redis,
    replicaPort,
    async stop() {
      await new Promise<void>((resolve) => replica.close(() => resolve()));
      redis.disconnect();
      await redisService.stop();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}

/** A public agent `slug` whose limits never bite, routed to `upstream` (host:port). */
export async function registerAgent(redis: Redis, slug: string, upstream: string): Promise<void> {
  await redis.hset(edgeKeyNames.agent(slug), edgeAgentHash({ id: `agt_${slug}`, accountId: 'acc_bench', slug, access: 'public', callerRpm: 1e9, agentRpm: 1e9, wakeable: false }));
  await redis.sadd(edgeKeyNames.upstreams(slug), upstream);
}
