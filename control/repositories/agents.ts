import type { Knex } from 'knex';
import type { AgentRow, AgentStatus } from '../domain/agent.js';
import { pageOf, type Page } from './page.js';

export interface AgentFilter {
  status?: AgentStatus;
  tag?: string;
}

/** What an account has asked to run, summed over its agents; quotas are checked on it. */
export interface AccountFootprint {
  agents: number;
  replicas: number;
  vcpu: number;
  /** Running replicas' memory and warm-parked replicas' (issue 40): a frozen replica still holds its memory. */
  memory_mb: number;
  /** Parked agents whose replica is frozen in memory now (agents.warm_parked_until ahead): not replicas, not metered. */
  warm_parked_replicas: number;
}

/** One replica's memory of an agent while it is warm-parked, else 0; `now()` is the transaction's start, like every row lock's. */
const WARM_PARKED_MEMORY_MB = "CASE WHEN warm_parked_until > now() THEN (deploy->'resources'->>'memory_mb')::int ELSE 0 END";
const WARM_PARKED = 'count(*) FILTER (WHERE warm_parked_until > now())::int AS warm_parked_replicas';

export class AgentRepository {
  constructor(private readonly db: Knex) {}

  async insert(row: AgentRow): Promise<void> {
    await this.db('agents').insert({ ...row, deploy: JSON.stringify(row.deploy), metadata: JSON.stringify(row.metadata), canary: row.canary === null ? null : JSON.stringify(row.canary) });
  }

  async find(accountId: string, id: string): Promise<AgentRow | undefined> {
    return this.db<AgentRow>('agents').where({ account_id: accountId, id }).first();
  }

  /** Locks the agent's row until the transaction ends, for read-check-write changes. */
  async findForUpdate(accountId: string, id: string): Promise<AgentRow | undefined> {
    return this.db<AgentRow>('agents').where({ account_id: accountId, id }).forUpdate().first();
  }

  async list(accountId: string, filter: AgentFilter, offset: number, limit: number): Promise<Page<AgentRow>> {
    const scoped = this.db<AgentRow>('agents').where({ account_id: accountId });
    if (filter.status) scoped.andWhere({ status: filter.status });
    if (filter.tag) scoped.andWhereRaw('tags @> ARRAY[?]::text[]', [filter.tag]);
    return pageOf(scoped, [{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }], offset, limit);
  }

  /** Applies `changes` and bumps the version; returns the new row, or undefined if it is gone. */
  async update(accountId: string, id: string, changes: Partial<AgentRow>, now: Date): Promise<AgentRow | undefined> {
    const patch: Record<string, unknown> = { ...changes, updated_at: now, version: this.db.raw('version + 1') };
    if (changes.deploy) patch.deploy = JSON.stringify(changes.deploy);
    if (changes.metadata) patch.metadata = JSON.stringify(changes.metadata);
    if (changes.canary) patch.canary = JSON.stringify(changes.canary);
    const [row] = await this.db<AgentRow>('agents').where({ account_id: accountId, id }).update(patch, '*');
    return row as AgentRow | undefined;
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.db('agents').where({ account_id: accountId, id }).delete()) > 0;
  }

  /** Requested figures (desired replicas) across the account's agents, leaving out one being changed. */
  async footprint(accountId: string, excludingAgentId?: string): Promise<AccountFootprint> {
    const scoped = this.db('agents').where({ account_id: accountId });
    if (excludingAgentId) scoped.andWhereNot({ id: excludingAgentId });
    const row = await scoped.first(
        this.db.raw('count(*)::int AS agents'),
        this.db.raw('coalesce(sum(desired_replicas), 0)::int AS replicas'),
        this.db.raw("coalesce(sum(desired_replicas * (deploy->'resources'->>'cpu')::numeric), 0)::float8 AS vcpu"),
        this.db.raw(`coalesce(sum(desired_replicas * (deploy->'resources'->>'memory_mb')::int + ${WARM_PARKED_MEMORY_MB}), 0)::int AS memory_mb`),
        this.db.raw(WARM_PARKED),
      );
    return row as AccountFootprint;
  }

  /**
   * Deployed agents with deploy.auto_scale on: what the scaler looks after. One set to 0
   * replicas was stopped by its owner and is left stopped.
   */
  async autoScaled(): Promise<AgentRow[]> {
    return this.db<AgentRow>('agents')
      .whereNotNull('deployed_version')
      .where('desired_replicas', '>', 0)
      .whereRaw("(deploy->>'auto_scale')::boolean");
  }

  /**
   * Running agents the platform parks when idle: deployed, auto-scaled with min_replicas 0
   * and at least one replica asked for (one at 0 is parked already, or stopped by its owner).
   */
  async parkable(): Promise<AgentRow[]> {
    return this.db<AgentRow>('agents')
      .whereNotNull('deployed_version')
      .where('desired_replicas', '>', 0)
      .whereRaw("(deploy->>'auto_scale')::boolean")
      .whereRaw("(deploy->>'min_replicas')::int = 0");
  }

  /** Agents with a canary running (issue 36), for the canary judge. */
  async withCanary(): Promise<AgentRow[]> {
    return this.db<AgentRow>('agents').whereNotNull('canary');
  }

  /** Every agent of one account, oldest first (for re-projecting them when the plan changes). */
  async ofAccount(accountId: string): Promise<AgentRow[]> {
    return this.db<AgentRow>('agents').where({ account_id: accountId }).orderBy('created_at');
  }

  /** Share-locks any account's agent: changes wait, readers do not. */
  async lockShared(id: string): Promise<AgentRow | undefined> {
    return this.db<AgentRow>('agents').where({ id }).forShare().first();
  }

  /** Any account's agent, for the orchestration loops that act on behalf of the platform. */
  async findBySlug(slug: string): Promise<AgentRow | undefined> {
    return this.db<AgentRow>('agents').where({ slug }).first();
  }

  async findAny(id: string): Promise<AgentRow | undefined> {
    return this.db<AgentRow>('agents').where({ id }).first();
  }

  /** Every agent's id, of every account: what the edge projection is rebuilt from. */
  async allIds(): Promise<string[]> {
    return (await this.db<AgentRow>('agents').select('id')).map((row) => row.id);
  }

  /** Every agent that has been deployed: what the orchestrator should be running. */
  async deployed(): Promise<AgentRow[]> {
    return this.db<AgentRow>('agents').whereNotNull('deployed_version');
  }

  /**
   * Records what the orchestrator reports; not a configuration change, so the version
   * stays. Only if the agent is still at `version`: a change made meanwhile wins.
   */
  async setObserved(id: string, version: number, observed: Pick<AgentRow, 'status' | 'replicas' | 'error'>, now: Date): Promise<void> {
    await this.db('agents').where({ id, version }).update({ ...observed, updated_at: now });
  }

  /**
   * setObserved for a status the agent is not in yet: false when it already was (another
   * copy of the control API saw it first) or changed meanwhile, so a transition is acted on once.
   */
  async enterObserved(id: string, version: number, observed: Pick<AgentRow, 'status' | 'replicas' | 'error'>, now: Date): Promise<boolean> {
    return (await this.db('agents').where({ id, version }).whereNot({ status: observed.status }).update({ ...observed, updated_at: now })) > 0;
  }

  /** How many agents of every account are in each status (statuses with none are absent). */
  async countByStatus(): Promise<Map<string, number>> {
    const rows: { status: string; count: number }[] = await this.db('agents').select('status').count({ count: '*' }).groupBy('status');
    return new Map(rows.map((row) => [row.status, Number(row.count)]));
  }

  /** What runs now (current replicas) across the account's agents. */
  async running(accountId: string): Promise<AccountFootprint> {
    const row = await this.db('agents')
      .where({ account_id: accountId })
      .first(
        this.db.raw('count(*)::int AS agents'),
        this.db.raw('coalesce(sum(replicas), 0)::int AS replicas'),
        this.db.raw("coalesce(sum(replicas * (deploy->'resources'->>'cpu')::numeric), 0)::float8 AS vcpu"),
        this.db.raw(`coalesce(sum(replicas * (deploy->'resources'->>'memory_mb')::int + ${WARM_PARKED_MEMORY_MB}), 0)::int AS memory_mb`),
        this.db.raw(WARM_PARKED),
      );
    return row as AccountFootprint;
  }
}
