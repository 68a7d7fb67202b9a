import type { Knex } from 'knex';
import { dayAfter } from '../domain/trace-spans.js';

/** The partitioned tables of migration 012; every day has a partition in each, made and dropped together. */
const PARTITIONED = ['trace_spans', 'trace_invocations'] as const;

/** `trace_spans_d20261127`: the day in the name, so listing the partitions lists the days. */
const partitionName = (table: string, day: string) => `${table}_d${day.replaceAll('-', '')}`;

/** SQLSTATEs of a CREATE … IF NOT EXISTS that lost a race to another creator of the same partition (pg_type's unique index, duplicate table). */
const LOST_CREATE_RACE = new Set(['23505', '42P07']);

/**
 * The day partitions of the trace tables (migration 012). Names and bounds come from
 * `YYYY-MM-DD` days the callers compute, never from request text.
 */
export class TracePartitionRepository {
  constructor(private readonly db: Knex) {}

  /** Days that have a partition, in order. */
  async days(): Promise<string[]> {
    const { rows } = await this.db.raw<{ rows: { name: string }[] }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'trace_spans'::regclass`,
    );
    return rows
      .map(({ name }) => /_d(\d{4})(\d{2})(\d{2})$/.exec(name))
      .filter((match): match is RegExpExecArray => match !== null)
      .map(([, year, month, day]) => `${year}-${month}-${day}`)
      .sort();
  }

  /** Makes the day's partitions if they are missing; several copies of the control API may do so at once. */
  async create(day: string): Promise<void> {
    assertDay(day);
    const next = dayAfter(day, 1);
    for (const table of PARTITIONED) {
      const bounds = table === 'trace_spans' ? `('${day}T00:00:00Z') TO ('${next}T00:00:00Z')` : `('${day}') TO ('${next}')`;
      try {
        await this.db.raw(`CREATE TABLE IF NOT EXISTS ${partitionName(table, day)} PARTITION OF ${table} FOR VALUES FROM ${bounds}`);
      } catch (error) {
        if (!LOST_CREATE_RACE.has((error as { code?: string }).code ?? '')) throw error;
      }
    }
  }

  /** Drops the day's partitions whole, with every span and invocation in them: retention without a row-by-row DELETE. */
  async drop(day: string): Promise<void> {
    assertDay(day);
    for (const table of PARTITIONED) await this.db.raw(`DROP TABLE IF EXISTS ${partitionName(table, day)}`);
  }
}

/** The only text that reaches the DDL above: checked, as it is spliced in, not bound. */
function assertDay(day: string): void {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`not a day: ${day}`);
}
