import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { RequestFiguresReader } from '../edge/request-figures.js';
import type { LogEntry, PublicLogEntry } from '../domain/log-entry.js';
import { notFound } from '../domain/errors.js';
import type { Orchestrator } from '../orchestrator/types.js';
import { repositoriesOn } from '../repositories/index.js';
import type { LogsQuery, MetricsSample } from '../schemas/agents.js';
import type { Principal } from './principal.js';

const round = (value: number) => Math.round(value * 100) / 100;
const average = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);

/** Logs and metrics of an agent's replicas, read from the orchestrator; its request figures, from what the edge counted. */
export class ObservabilityService {
  constructor(
    private readonly db: Knex,
    private readonly orchestrator: Orchestrator,
    private readonly clock: Clock,
    private readonly requestFigures: Pick<RequestFiguresReader, 'lastMinute'>,
  ) {}

  /** `total` counts the matching entries the orchestrator keeps (the last 1000 lines per replica); `logs` is the newest `limit` of them, oldest first. */
  async logs(principal: Principal, agentId: string, query: LogsQuery): Promise<{ logs: PublicLogEntry[]; total: number }> {
    await this.assertAgentOf(principal, agentId);
    const entries = await this.entries(agentId, query);
    const limit = query.limit ?? 100;
    return { logs: entries.slice(-limit).map(withoutId), total: entries.length };
  }

  /** Entries with their ids, for the stream, which resumes after an id. */
  async entries(agentId: string, query: Omit<LogsQuery, 'limit'>): Promise<LogEntry[]> {
    // Invocation ids are kept in lower case, as the invocations API stores them; the filter takes either.
    const invocationId = query.invocation_id?.toLowerCase();
    return this.orchestrator.logs(agentId, { limit: 1000, level: query.level, replicaId: query.replica_id, invocationId });
  }

  async metrics(principal: Principal, agentId: string): Promise<MetricsSample> {
    await this.assertAgentOf(principal, agentId);
    return this.sample(agentId);
  }

  async sample(agentId: string): Promise<MetricsSample> {
    const [replicas, requests] = await Promise.all([
      this.orchestrator.metrics(agentId),
      this.requestFigures.lastMinute(agentId),
    ]);
    return {
      agent_id: agentId,
      timestamp: this.clock.now().toISOString(),
      cpu_percent: round(average(replicas.map((r) => r.cpuPercent))),
      memory_mb: round(average(replicas.map((r) => r.memoryMb))),
      memory_percent: round(average(replicas.map((r) => (r.memoryLimitMb ? (100 * r.memoryMb) / r.memoryLimitMb : 0)))),
      replicas: replicas.length,
      request_count: requests.requestCount,
      error_count: requests.errorCount,
      avg_latency_ms: round(requests.avgLatencyMs),
      p95_latency_ms: round(requests.p95LatencyMs),
    };
  }

  async exists(principal: Principal, agentId: string): Promise<boolean> {
    return (await repositoriesOn(this.db).agents.find(principal.accountId, agentId)) !== undefined;
  }

  async assertAgentOf(principal: Principal, agentId: string): Promise<void> {
    if (!(await this.exists(principal, agentId))) throw notFound('Agent');
  }
}

const withoutId = ({ id: _id, ...entry }: LogEntry): PublicLogEntry => entry;
