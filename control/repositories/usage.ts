import type { Knex } from 'knex';

export interface MeteredReplica {
  replicaId: string;
  agentId: string;
  accountId: string;
  cpu: number;
  memoryMb: number;
}

export interface PeriodTotals {
  replicaHours: number;
  vcpuHours: number;
  memoryGbHours: number;
}

/** Replica intervals and flushed request counts: what the bill is computed from. */
export class UsageRepository {
  constructor(private readonly db: Knex) {}

  /** Opens an interval unless the replica has one open (the partial unique index decides). */
  async open(replica: MeteredReplica, at: Date): Promise<void> {
    await this.db.raw(
      `INSERT INTO replica_intervals (account_id, agent_id, replica_id, cpu, memory_mb, started_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (replica_id) WHERE stopped_at IS NULL DO NOTHING`,
      [replica.accountId, replica.agentId, replica.replicaId, replica.cpu, replica.memoryMb, at, at],
    );
  }

  async openReplicaIds(agentId: string): Promise<string[]> {
    const rows = await this.db('replica_intervals').where({ agent_id: agentId }).whereNull('stopped_at').select('replica_id');
    return rows.map((row) => row.replica_id as string);
  }

  async agentsWithOpenIntervals(): Promise<string[]> {
    const rows = await this.db('replica_intervals').whereNull('stopped_at').distinct('agent_id');
    return rows.map((row) => row.agent_id as string);
  }

  async close(agentId: string, replicaIds: string[], at: Date): Promise<void> {
    if (replicaIds.length === 0) return;
    await this.db('replica_intervals').where({ agent_id: agentId }).whereIn('replica_id', replicaIds).whereNull('stopped_at')
      .update({ stopped_at: at, last_seen_at: at });
  }

  /** Closes an interval where it was last seen: for replicas that went away while nobody metered. */
  async closeAtLastSeen(agentId: string, replicaIds: string[]): Promise<void> {
    if (replicaIds.length === 0) return;
    await this.db('replica_intervals').where({ agent_id: agentId }).whereIn('replica_id', replicaIds).whereNull('stopped_at')
      .update({ stopped_at: this.db.ref('last_seen_at') });
  }

  async touch(agentId: string, replicaIds: string[], at: Date): Promise<void> {
    if (replicaIds.length === 0) return;
    await this.db('replica_intervals').where({ agent_id: agentId }).whereIn('replica_id', replicaIds).whereNull('stopped_at')
      .update({ last_seen_at: at });
  }

  /**
   * Replica time of the account within [from, to): each interval clipped to the period,
   * so one that crosses the month boundary counts only its part; an open one runs to `to`.
   */
  async totals(accountId: string, from: Date, to: Date): Promise<PeriodTotals> {
    const { rows } = await this.db.raw(
      `SELECT COALESCE(SUM(hours), 0) AS replica_hours,
              COALESCE(SUM(hours * cpu), 0) AS vcpu_hours,
              COALESCE(SUM(hours * memory_mb / 1024.0), 0) AS memory_gb_hours
         FROM (SELECT cpu, memory_mb,
                      EXTRACT(EPOCH FROM (LEAST(COALESCE(stopped_at, :to), :to) - GREATEST(started_at, :from))) / 3600.0 AS hours
                 FROM replica_intervals
                WHERE account_id = :account AND started_at < :to AND COALESCE(stopped_at, :to) > :from) clipped`,
      { account: accountId, from, to },
    );
    const row = rows[0];
    return { replicaHours: Number(row.replica_hours), vcpuHours: Number(row.vcpu_hours), memoryGbHours: Number(row.memory_gb_hours) };
  }

  async requests(accountId: string, month: string): Promise<number> {
    const row = await this.db('request_counts').where({ account_id: accountId, month }).sum({ total: 'count' }).first();
    return Number(row?.total ?? 0);
  }

  /** Adds one flushed counter, once: false when this flush id was applied before. */
  async addRequests(flushId: string, counter: { accountId: string; agentId: string; month: string; count: number }, at: Date): Promise<boolean> {
    const inserted = await this.db('usage_flushes').insert({ flush_id: flushId, flushed_at: at }).onConflict('flush_id').ignore().returning('flush_id');
    if (inserted.length === 0) return false;
    await this.db.raw(
      `INSERT INTO request_counts (account_id, agent_id, month, count) VALUES (?, ?, ?, ?)
       ON CONFLICT (agent_id, month) DO UPDATE SET count = request_counts.count + EXCLUDED.count`,
      [counter.accountId, counter.agentId, counter.month, counter.count],
    );
    return true;
  }
}
