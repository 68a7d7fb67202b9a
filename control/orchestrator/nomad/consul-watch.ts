import type { Logger } from 'pino';
import type { ConsulHealthCheck } from './api-types.js';
import { BlockingWatch, type BlockingWatchOptions } from './blocking-watch.js';
import type { ApiClient } from './http-client.js';
import { AGENT_SERVICE_TAG } from './job-spec.js';

/** Allocation ids whose agent service passes every one of its checks. */
export type PassingAllocations = ReadonlySet<string>;

/**
 * The allocation behind a Consul service instance. Nomad registers group services with
 * the id `_nomad-task-<alloc id>-group-<group>-<service>-<port label>` (task services:
 * `_nomad-task-<alloc id>-<task>-…`; client/serviceregistration/id.go,
 * `MakeAllocServiceID`); the alloc id is a UUID.
 */
export function allocationOf(serviceId: string): string | null {
  const match = /^_nomad-task-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-/.exec(serviceId);
  return match ? match[1]! : null;
}

/**
 * Allocations whose every check passes, as `?passing` on /v1/health/service computes it
 * for one instance (a warning is not passing). Node checks carry no ServiceID and no tags,
 * so the tag filter leaves them out: a node that dies takes its allocations to `lost` in
 * Nomad, which drops them from the routing set there.
 */
export function passingFrom(checks: ConsulHealthCheck[]): Set<string> {
  const verdict = new Map<string, boolean>();
  for (const check of checks) {
    const allocation = allocationOf(check.ServiceID);
    if (!allocation) continue;
    verdict.set(allocation, (verdict.get(allocation) ?? true) && check.Status === 'passing');
  }
  return new Set([...verdict].filter(([, passing]) => passing).map(([allocation]) => allocation));
}

/**
 * The health of every agent's replicas with ONE Consul blocking query, whatever the
 * number of agents: GET /v1/health/state/any filtered on the tag every agent service
 * carries (Consul's health API supports `filter` on checks' ServiceTags). One watch per
 * agent would hold one connection per agent, past the 200 Consul accepts from one
 * address by default.
 */
export function consulChecksWatch(
  consul: ApiClient,
  options: BlockingWatchOptions & { waitSeconds: number },
  onChange: (passing: PassingAllocations) => void,
  logger: Logger,
): BlockingWatch<ConsulHealthCheck[]> {
  let current: Set<string> = new Set();
  const read = async (index: number, signal: AbortSignal) => {
    const { body, headers } = await consul.request<ConsulHealthCheck[] | null>('GET', '/v1/health/state/any', {
      query: { filter: `ServiceTags contains "${AGENT_SERVICE_TAG}"`, index: index || undefined, wait: `${options.waitSeconds}s` },
      // Consul adds up to wait/16 of jitter to a blocking query (its "Blocking Queries" page).
      timeoutMs: options.waitSeconds * 1000 * 1.1 + 15_000,
      signal,
    });
    return { body: body ?? [], index: Number(headers.get('x-consul-index') ?? 0) };
  };
  const onRead = (checks: ConsulHealthCheck[]) => {
    const passing = passingFrom(checks);
    if (sameSet(passing, current)) return;
    current = passing;
    onChange(passing);
  };
  return new BlockingWatch('consul agent checks', read, options, onRead, logger);
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>) => a.size === b.size && [...a].every((item) => b.has(item));
