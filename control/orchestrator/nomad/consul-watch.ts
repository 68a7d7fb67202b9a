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
 * for one instance (a warning is not passing): the checks of its service and those of its
 * node. Consul gives each instance its node's checks (the ones with no ServiceID, such as
 * serfHealth or node maintenance) before its own (agent/consul/state/catalog.go,
 * `parseCheckServiceNodes`), and `?passing` drops the instance when any of them is not
 * passing (agent/health_endpoint.go, `filterNonPassing`; DNS the same through
 * agent/structs/structs.go, `CheckServiceNodes.FilterIgnore`). So a replica on a node
 * Consul sees as dead leaves the routing set at once, not when Nomad marks it lost.
 */
export function passingFrom(checks: ConsulHealthCheck[]): Set<string> {
  const failingNodes = new Set(checks.filter((check) => check.ServiceID === '' && check.Status !== 'passing').map((check) => check.Node));
  const verdict = new Map<string, boolean>();
  for (const check of checks) {
    const allocation = allocationOf(check.ServiceID);
    if (!allocation) continue;
    const passing = check.Status === 'passing' && !failingNodes.has(check.Node);
    verdict.set(allocation, (verdict.get(allocation) ?? true) && passing);
  }
  return new Set([...verdict].filter(([, passing]) => passing).map(([allocation]) => allocation));
}

/**
 * The checks the watch reads: every agent service's (by their tag) and every node's, which
 * have an empty ServiceID and no tags (go-bexpr's `is empty`, grammar.peg `MatchIsEmpty`).
 */
export const CHECKS_FILTER = `ServiceTags contains "${AGENT_SERVICE_TAG}" or ServiceID is empty`;

/**
 * The health of every agent's replicas with ONE Consul blocking query, whatever the
 * number of agents: GET /v1/health/state/any filtered to the tag every agent service
 * carries and to node checks (Consul's health API supports `filter` on each check). One
 * watch per agent would hold one connection per agent, past the 200 Consul accepts from
 * one address by default.
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
      query: { filter: CHECKS_FILTER, index: index || undefined, wait: `${options.waitSeconds}s` },
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
