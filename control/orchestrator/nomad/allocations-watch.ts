import type { Logger } from 'pino';
import type { AllocationListStub } from './api-types.js';
import { BlockingWatch, type BlockingWatchOptions } from './blocking-watch.js';
import type { ApiClient } from './http-client.js';
import { GROUP } from './job-spec.js';

/** Job id → the allocations of its agent group. */
export type AllocationsByJob = ReadonlyMap<string, AllocationListStub[]>;

export function groupByJob(allocations: AllocationListStub[]): Map<string, AllocationListStub[]> {
  const byJob = new Map<string, AllocationListStub[]>();
  for (const allocation of allocations) {
    if (allocation.TaskGroup !== GROUP) continue;
    const list = byJob.get(allocation.JobID) ?? [];
    list.push(allocation);
    byJob.set(allocation.JobID, list);
  }
  return byJob;
}

/**
 * Every agent job's allocations with ONE Nomad blocking query: GET /v1/allocations in the
 * agents' namespace, filtered to our jobs, with task states (events, restarts) and
 * resources (the host address of each replica's port). Nomad answers when the allocations
 * table moved past the index (nomad/alloc_endpoint.go, `Alloc.List`, a blocking query
 * on the "allocs" index); a poll per job would hold one connection per agent, past the
 * 100 Nomad accepts from one address by default.
 */
export function allocationsWatch(
  nomad: ApiClient,
  scope: { namespace: string; region: string | null },
  options: BlockingWatchOptions & { waitSeconds: number },
  onRead: (byJob: AllocationsByJob) => void,
  logger: Logger,
): BlockingWatch<AllocationListStub[]> {
  const read = async (index: number, signal: AbortSignal) => {
    const { body, headers } = await nomad.request<AllocationListStub[] | null>('GET', '/v1/allocations', {
      query: {
        namespace: scope.namespace,
        region: scope.region ?? undefined,
        // go-bexpr, applied per allocation by nomad/state/paginator/paginator.go; `matches`
        // is a regular expression, as in Nomad's own filter tests (nomad/*_endpoint_test.go).
        filter: 'JobID matches "^agent-"',
        resources: true,
        task_states: true,
        index: index || undefined,
        wait: `${options.waitSeconds}s`,
      },
      // Nomad adds up to wait/16 of jitter to a blocking query (api docs, "Blocking Queries").
      timeoutMs: options.waitSeconds * 1000 * 1.1 + 15_000,
      signal,
    });
    return { body: body ?? [], index: Number(headers.get('x-nomad-index') ?? 0) };
  };
  return new BlockingWatch('nomad agent allocations', read, options, (allocations) => onRead(groupByJob(allocations)), logger);
}
