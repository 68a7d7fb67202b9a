import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { loadAuthorizationService } from '../../proto/load.js';
import { loadAuthzConfig, type AuthzServerKind } from '../../authz/config.js';
import { startAuthz, type RunningAuthz } from '../../authz/server.js';
import { healthServiceDefinition, type HealthCheckReply } from '../../authz/health.js';
import { scanKeys } from '../../control/db/redis.js';
import { scratchDirectory } from '../../runtime-image/test/helpers/scratch-directory.js';

/**
 * authz on a Unix socket of its own (as Envoy's sidecar) with real Redis (the run's
 * TEST_REDIS_URL), a gRPC client that calls Check as Envoy does, and a writer of the
 * control API's projection keys (the same key names authz's Lua script reads). Each suite
 * has a Redis key prefix of its own: authz reads through the client it is given, which
 * carries the prefix.
 */

/**
 * A client of the run's Redis under `keyPrefix`: a fresh one by default, for a suite of its
 * own; the prefix of a control (`control.config.redisKeyPrefix`) for an authz paired with it.
 */
export function connectTestRedis(keyPrefix = `s_${randomBytes(4).toString('hex')}:`): Redis {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('TEST_REDIS_URL is unset: run through mocha (test/support/global.ts starts Redis)');
  return new Redis(url, { maxRetriesPerRequest: 1, keyPrefix });
}

/**
 * A path for a test authz's Unix socket (AUTHZ_GRPC_SOCKET), in a directory of its own
 * under the OS's temp dir, so that authzs started at once never meet; `remove` deletes it.
 */
export function tempAuthzSocket(): { path: string; remove(): void } {
  const dir = scratchDirectory('authz');
  return { path: join(dir, 'authz.sock'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A DNS name no other suite uses, so hostnames cannot collide across files. */
export const uniqueAgentDomain = (label: string) => `${label}-${randomBytes(3).toString('hex')}.test`;

export interface TestAuthz {
  authz: RunningAuthz;
  client: AuthorizationTestClient;
  close(): Promise<void>;
}

export interface TestAuthzOptions {
  redis: Redis;
  clock: Clock;
  agentDomain: string;
  trustExternalAddress?: boolean;
  redisTimeoutMs?: number;
  maxInFlight?: number;
  maxQueued?: number;
  wakeTimeoutSeconds?: number;
  /** AUTHZ_SERVER: the gRPC server authz runs on (default: the config's, its own). */
  server?: AuthzServerKind;
}

export async function startTestAuthz(options: TestAuthzOptions): Promise<TestAuthz> {
  const socket = tempAuthzSocket();
  const config = loadAuthzConfig({
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://unused',
    REDIS_KEY_PREFIX: options.redis.options.keyPrefix,
    AGENT_DOMAIN: options.agentDomain,
    AUTHZ_GRPC_SOCKET: socket.path,
    AUTHZ_METRICS_PORT: '0',
    AUTHZ_TRUST_EXTERNAL_ADDRESS: String(options.trustExternalAddress ?? false),
    AUTHZ_REDIS_TIMEOUT_MS: String(options.redisTimeoutMs ?? 100),
    AUTHZ_MAX_IN_FLIGHT: options.maxInFlight === undefined ? undefined : String(options.maxInFlight),
    AUTHZ_MAX_QUEUED: options.maxQueued === undefined ? undefined : String(options.maxQueued),
    WAKE_TIMEOUT_SECONDS: options.wakeTimeoutSeconds === undefined ? undefined : String(options.wakeTimeoutSeconds),
    AUTHZ_SERVER: options.server,
  });
  const authz = await startAuthz(config, { redis: options.redis, clock: options.clock, logger: pino({ level: 'silent' }) });
  const client = new AuthorizationTestClient(authz.grpcAddress);
  return {
    authz,
    client,
    async close() {
      client.close();
      await authz.close();
      socket.remove();
    },
  };
}

/** A CheckResponse as a proto-loader client decodes it (enum names, defaults filled in). */
export interface DecodedCheckResponse {
  status: { code: number; message: string };
  http_response: 'denied_response' | 'ok_response' | undefined;
  denied_response: { status: { code: string }; headers: DecodedHeaderOption[]; body: string } | null;
  ok_response: { headers: DecodedHeaderOption[]; headers_to_remove: string[] } | null;
  dynamic_metadata: { fields: Record<string, { stringValue: string; kind: string }> } | null;
}

export interface DecodedHeaderOption {
  header: { key: string; value: string };
  append: { value: boolean } | null;
  append_action: string;
}

export interface EnvoyCheckInput {
  host: string;
  source?: string;
  headers?: Record<string, string>;
  path?: string;
  method?: string;
}

/** The CheckRequest Envoy sends: attributes only, headers restricted to allowed_headers. */
export function envoyCheckRequest({ host, source = '203.0.113.7', headers = {}, path = '/', method = 'GET' }: EnvoyCheckInput) {
  return {
    attributes: {
      source: { address: { socket_address: { address: source, port_value: 53124 } } },
      destination: { address: { socket_address: { address: '10.0.0.5', port_value: 7080 } } },
      request: {
        http: { id: randomBytes(8).toString('hex'), method, host, path, scheme: 'http', protocol: 'HTTP/1.1', headers },
      },
    },
  };
}

type Callback<T> = (error: ServiceError | null, response?: T) => void;

export class AuthorizationTestClient {
  private readonly client: { Check(request: unknown, options: object, callback: Callback<DecodedCheckResponse>): void; close(): void };
  private readonly health: { Check(request: unknown, options: object, callback: Callback<HealthCheckReply>): void; close(): void };

  constructor(address: string) {
    const { Client } = loadAuthorizationService();
    this.client = new Client(address, credentials.createInsecure()) as never;
    const HealthClient = makeGenericClientConstructor(healthServiceDefinition, 'grpc.health.v1.Health');
    this.health = new HealthClient(address, credentials.createInsecure()) as never;
  }

  check(input: EnvoyCheckInput): Promise<DecodedCheckResponse> {
    return this.call(this.client, envoyCheckRequest(input));
  }

  healthCheck(service = ''): Promise<HealthCheckReply> {
    return this.call(this.health, { service });
  }

  private call<T>(client: { Check(request: unknown, options: object, callback: Callback<T>): void }, request: unknown): Promise<T> {
    return new Promise((resolve, reject) =>
      client.Check(request, { deadline: new Date(Date.now() + 5_000) }, (error, response) => (error ? reject(error) : resolve(response as T))),
    );
  }

  close(): void {
    this.client.close();
    this.health.close();
  }
}

/** Status, headers (lowercase name → value) and body of a denial, for compact assertions. */
export function denialOf(response: DecodedCheckResponse) {
  const denied = response.denied_response;
  if (response.http_response !== 'denied_response' || !denied) throw new Error(`expected a denial, got ${JSON.stringify(response)}`);
  return {
    grpcCode: response.status.code,
    httpStatus: denied.status.code,
    headers: Object.fromEntries(denied.headers.map((option) => [option.header.key, option.header.value])),
    appendFields: denied.headers.map((option) => option.append),
    body: denied.body,
  };
}

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');
export const newAccessKey = () => `agk_${randomBytes(24).toString('base64url')}`;

export interface ProjectedAgentInput {
  slug: string;
  id?: string;
  access: 'public' | 'private';
  callerRpm?: number;
  agentRpm?: number;
  keys?: string[];
  upstreams?: string[];
  /** Scales to zero: a Check that finds no replica wakes it (contract/edge-keys.ts EDGE_AGENT_FIELDS.wakeable). */
  wakeable?: boolean;
}

/** Writes one agent's projection as the control API does (control/edge/projection.ts). */
export class EdgeProjectionWriter {
  private readonly slugs = new Set<string>();

  constructor(private readonly redis: Redis) {}

  async putAgent({ slug, id = `agt_${slug}`, access, callerRpm = 120, agentRpm = 300, keys = [], upstreams = [], wakeable = false }: ProjectedAgentInput): Promise<string> {
    this.slugs.add(slug);
    const multi = this.redis.multi().hset(`edge:agent:{${slug}}`, {
      id,
      account: `acc_${slug}`,
      access,
      caller_rpm: String(callerRpm),
      agent_rpm: String(agentRpm),
      wakeable: wakeable ? '1' : '0',
    });
    if (keys.length > 0) multi.sadd(`edge:keys:{${slug}}`, ...keys.map(sha256Hex));
    if (upstreams.length > 0) multi.sadd(`edge:upstreams:{${slug}}`, ...upstreams);
    await multi.exec();
    return id;
  }

  async revokeKey(slug: string, key: string): Promise<void> {
    await this.redis.srem(`edge:keys:{${slug}}`, sha256Hex(key));
  }

  async addKey(slug: string, key: string): Promise<void> {
    await this.redis.sadd(`edge:keys:{${slug}}`, sha256Hex(key));
  }

  async setUpstreams(slug: string, upstreams: string[]): Promise<void> {
    const multi = this.redis.multi().del(`edge:upstreams:{${slug}}`);
    if (upstreams.length > 0) multi.sadd(`edge:upstreams:{${slug}}`, ...upstreams);
    await multi.exec();
  }

  /** Every key of every agent written here, counters and usage included. */
  async cleanUp(): Promise<void> {
    for (const slug of this.slugs) {
      const names = await scanKeys(this.redis, `edge:*{${slug}}*`);
      if (names.length > 0) await this.redis.del(...names);
    }
    this.slugs.clear();
  }
}
