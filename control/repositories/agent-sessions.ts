import type { Knex } from 'knex';
import { AGENT_GONE, NO_SESSION, type AgentSessionRow, type ReadAnswer, type ReadSession, type SessionSummary, type SessionTag, type StoredSession } from '../domain/agent-session.js';
import { PreparedStatement } from '../db/prepared-statement.js';
import type { AgentRow } from '../domain/agent.js';
import { pageOf, type Page } from './page.js';

/** First key of the advisory lock that makes one agent's session creations take turns (loop-locks.ts has "agn"). */
const CREATION_LOCK_NAMESPACE = 0x61_67_73; // "ags"

/** The session `s` named by `agent` and `session`, live at :now, joined to its agent (`UPDATE agent_sessions s … FROM agents`). */
const liveAt = (agent: string, session: string) => `agents.id = s.agent_id AND s.agent_id = ${agent} AND s.session_id = ${session} AND s.expires_at > :now`;

/** The one session of :agent and :session, live at :now. */
const LIVE_AT_SQL = liveAt(':agent', ':session');

/** The agent's TTL in seconds: sessionTtlSeconds (domain/deploy.ts) in SQL, the deploy field or :ttl, the default. */
const TTL_SQL = `COALESCE((agents.deploy->>'session_ttl_seconds')::int, CAST(:ttl AS integer))`;

/** :now plus the agent's TTL. */
const EXPIRY_SQL = `CAST(:now AS timestamptz) + make_interval(secs => ${TTL_SQL})`;

/** A read's row where the agent has no live session by the id read: every session column null. */
type NoSessionRow = { [column in keyof ReadSession]: null };

/** One read of a batch: the session, and the version of it the reader holds, if any. */
export interface SessionRead {
  agentId: string;
  sessionId: string;
  known?: SessionTag;
}

/** One append of a batch: its session, the version it expects, and its messages. */
export interface SessionAppendAtVersion extends SessionAppend {
  agentId: string;
  sessionId: string;
  version: number;
}

/** A batch statement's rows, each carrying `i`, its call's place from 1, as one answer per call: undefined for a call with no row. */
function inCallOrder<Row>(calls: number, rows: (Row & { i: number })[]): (Row | undefined)[] {
  const answers = new Array<Row | undefined>(calls).fill(undefined);
  for (const row of rows) answers[row.i - 1] = row;
  return answers;
}

/** A session's base: its messages as a whole, as a create or a replace writes them. */
export type SessionBase = Pick<AgentSessionRow, 'messages_sealed' | 'size_bytes' | 'message_count'>;

/** One append: its messages' JSON array sealed (null when it has none), that array's bytes and its messages. */
export interface SessionAppend {
  sealed: string | null;
  bytes: number;
  messageCount: number;
}

const SUMMARY_COLUMNS = ['agent_id', 'session_id', 'version', 'size_bytes', 'message_count', 'created_at', 'last_used_at', 'expires_at'] as const;
const SUMMARY_SQL = SUMMARY_COLUMNS.map((column) => `s.${column}`).join(', ');

/*
 * The statements every session call makes, prepared once per connection (PreparedStatement):
 * planning the joins and the appends' subquery was half of Postgres's CPU for each, the
 * read taking 317 µs of it unplanned and 157 µs prepared, measured on one backend over
 * 3,000 calls. A name stands for one text on a connection, so each has one statement.
 *
 * Reads and appends come in batches (StatementBatches, in AgentSessionService): one statement
 * answers many calls, each a row of `r`, the calls' arrays unnested in order, `r.i` its place.
 */

/**
 * The calls of a batch as rows: `arrays` (each a `CAST(:param AS type[])`) unnested side by
 * side. Each array is read through a scalar subquery, which hides its length from the planner,
 * so that Postgres plans the statement once per connection rather than on every call.
 *
 * Postgres plans a prepared statement for its values five times, then keeps one plan for any
 * values if that plan is estimated no dearer than the average of those five, planning cost
 * included; otherwise it plans every execution anew (plancache.c, choose_custom_plan, with
 * cached_plan_cost). Seen through its length, a lone call's array made a plan for one row,
 * while the plan for any values assumes ten rows of an array it cannot see (selfuncs.c,
 * estimate_array_length): ten times dearer, so never chosen, and every read and append was
 * planned again. Hidden, both assume ten rows, the same nested loops over the primary keys
 * that fit a batch of one or a hundred. Measured on one connection over 40 reads of a lone
 * call, against 20,000 sessions: 0 of 40 executions used the kept plan before, 35 after
 * (`pg_prepared_statements`' generic_plans), and a read took 1.8 to 2.1 ms before against 0.7
 * to 1.0 ms after, as the client saw it (median of the last 30 reads, two runs of each).
 */
function callsAsRows(arrays: string[], columns: string[]): string {
  return `unnest(${arrays.map((array) => `(SELECT ${array})`).join(', ')}) WITH ORDINALITY AS r(${columns.join(', ')}, i)`;
}

/**
 * A read moves a session's last use, and its expiry, only when a second or more has passed
 * since: last uses are kept to the second, and a read of a session used a moment ago, as
 * each turn's read of the turn before's write is, is not a write (a new row version and an
 * entry in each of the table's three indexes, for every read).
 */
export const TOUCH_GRANULARITY_SECONDS = 1;

/** The sealed appends after session `s`'s base, in order: what a read joins to the base (StoredSession.appended_sealed). */
const APPENDED_SEALED_SQL = `ARRAY(
       SELECT a.messages_sealed FROM agent_session_appends a
       WHERE a.agent_id = s.agent_id AND a.session_id = s.session_id AND a.version > s.base_version ORDER BY a.version
     )`;

/** Whether the session is the one the reader holds: versions start at 1, so version 0 is held by no one; created_at tells a session from one made anew under its id. */
const UNCHANGED_SQL = `s.version = r.known_version AND date_trunc('milliseconds', s.created_at) = r.known_created_at`;

/** The renewed expiry is the granularity or more past the stored one, or before it (the TTL was shortened). */
const TOUCH_DUE_SQL = `(${EXPIRY_SQL} >= s.expires_at + make_interval(secs => ${TOUCH_GRANULARITY_SECONDS}) OR ${EXPIRY_SQL} < s.expires_at)`;

/**
 * A row for each read whose agent exists, its session's columns null where the agent has no
 * live session by that id: so a read that finds nothing tells a new conversation (404) from a
 * token whose agent was deleted (401) in the same statement, with no look at the agent after it.
 */
const TOUCH_AND_READ_EACH = new PreparedStatement<(ReadSession | NoSessionRow) & { i: number }>(
  'agent_sessions_touch_and_read_each',
  `WITH r AS (
     SELECT * FROM ${callsAsRows(
       ['CAST(:agents AS text[])', 'CAST(:sessions AS text[])', 'CAST(:knownVersions AS integer[])', 'CAST(:knownCreatedAts AS timestamptz[])'],
       ['agent', 'session', 'known_version', 'known_created_at'],
     )}
   ), touched AS (
     UPDATE agent_sessions s SET last_used_at = :now, expires_at = ${EXPIRY_SQL}
     FROM r, agents, (SELECT set_config('synchronous_commit', 'off', true)) AS lazy_commit
     WHERE ${liveAt('r.agent', 'r.session')} AND ${TOUCH_DUE_SQL}
     RETURNING s.agent_id, s.session_id, s.last_used_at, s.expires_at
   )
   SELECT CAST(r.i AS integer) AS i, s.agent_id, s.session_id, s.version, s.size_bytes, s.message_count, s.created_at,
     COALESCE(t.last_used_at, s.last_used_at) AS last_used_at, COALESCE(t.expires_at, s.expires_at) AS expires_at,
     s.base_version, ${UNCHANGED_SQL} AS unchanged,
     CASE WHEN ${UNCHANGED_SQL} THEN NULL ELSE s.messages_sealed END AS messages_sealed,
     CASE WHEN ${UNCHANGED_SQL} THEN NULL ELSE ${APPENDED_SEALED_SQL} END AS appended_sealed
   FROM r JOIN agents ON agents.id = r.agent
   LEFT JOIN agent_sessions s ON s.agent_id = r.agent AND s.session_id = r.session AND s.expires_at > :now
   LEFT JOIN touched t ON t.agent_id = s.agent_id AND t.session_id = s.session_id`,
);

/** The stored array and the appended one join as text: '[a]' and '[b]' make '[a,b]', one byte fewer than both; '[]' and '[b]' make '[b]'. */
const GROWN_BY_SQL = `(CASE WHEN s.size_bytes <= 2 THEN r.into_empty ELSE r.into_others END)`;

/**
 * Each call's compare-and-set: Postgres updates a row once however many rows of `r` it joins
 * (the UPDATE … FROM rule), so of two appends of one session at one version in a batch,
 * one applies and the other finds no row, as if it had come second.
 */
const APPEND_EACH_AT_VERSION = new PreparedStatement<SessionSummary & { i: number }>(
  'agent_sessions_append_each_at_version',
  `WITH r AS (
     SELECT * FROM ${callsAsRows(
       [
         'CAST(:agents AS text[])', 'CAST(:sessions AS text[])', 'CAST(:versions AS integer[])', 'CAST(:counts AS integer[])', 'CAST(:sealed AS text[])',
         'CAST(:intoEmpty AS integer[])', 'CAST(:intoOthers AS integer[])',
       ],
       ['agent', 'session', 'version', 'count', 'sealed', 'into_empty', 'into_others'],
     )}
   ), head AS (
     UPDATE agent_sessions s
     SET version = s.version + 1, size_bytes = s.size_bytes + ${GROWN_BY_SQL}, message_count = s.message_count + r.count,
         last_used_at = :now, expires_at = ${EXPIRY_SQL}
     FROM r, agents
     WHERE ${liveAt('r.agent', 'r.session')} AND s.version = r.version AND s.size_bytes + ${GROWN_BY_SQL} <= CAST(:maxBytes AS integer)
     RETURNING CAST(r.i AS integer) AS i, r.sealed, ${SUMMARY_SQL}
   ), appended AS (
     INSERT INTO agent_session_appends (agent_id, session_id, version, messages_sealed)
     SELECT agent_id, session_id, version, sealed FROM head WHERE sealed IS NOT NULL
   )
   SELECT i, ${SUMMARY_COLUMNS.join(', ')} FROM head`,
);

const REPLACE_AT_VERSION = new PreparedStatement<SessionSummary>(
  'agent_sessions_replace_at_version',
  `WITH head AS (
     UPDATE agent_sessions s
     SET version = s.version + 1, base_version = s.version + 1, messages_sealed = CAST(:sealed AS text), size_bytes = CAST(:bytes AS integer), message_count = CAST(:count AS integer),
         last_used_at = :now, expires_at = ${EXPIRY_SQL}
     FROM agents
     WHERE ${LIVE_AT_SQL} AND s.version = CAST(:version AS integer)
     RETURNING ${SUMMARY_SQL}
   ), folded AS (
     DELETE FROM agent_session_appends a USING head WHERE a.agent_id = head.agent_id AND a.session_id = head.session_id
   )
   SELECT * FROM head`,
);

/**
 * Agents' conversation sessions (migrations 010 and 011): a base and the appends after it. Every method names the agent: a session id
 * means nothing without it. Expiry is the caller's to judge (isLive), by its clock.
 */
export class AgentSessionRepository {
  constructor(private readonly db: Knex) {}

  /**
   * The agent, kept from being deleted (not from being changed) until the transaction ends,
   * so the sessions' foreign key holds for what it writes; and the agent's creation turn,
   * held as long: creations of its sessions take turns, so that counting them and evicting
   * to make room is exact. One statement for both, the turn taken only when the agent is
   * there. Undefined when it is not.
   */
  async agentInCreationTurn(agentId: string): Promise<AgentRow | undefined> {
    const { rows } = await this.db.raw<{ rows: (AgentRow & { creation_turn: unknown })[] }>(
      'SELECT agents.*, pg_advisory_xact_lock(?, hashtext(id)) AS creation_turn FROM agents WHERE id = ? FOR KEY SHARE',
      [CREATION_LOCK_NAMESPACE, agentId],
    );
    if (rows.length === 0) return undefined;
    const { creation_turn: _taken, ...agent } = rows[0]!;
    return agent;
  }

  /**
   * Reads each session of `reads` live at `now`, in one statement, and records each read as
   * a use: its last use moves to `now` and its expiry to its agent's TTL later, when a
   * second or more has passed since (TOUCH_GRANULARITY_SECONDS). With each session come the sealed
   * messages of its appends after the base, in order, unless it is the session and version
   * the read says it holds (`known`): then none of its messages are read, not even from
   * TOAST. One answer per read, in order: NO_SESSION where the agent has none live by that
   * id, AGENT_GONE where the agent itself no longer exists.
   *
   * A read that moves an expiry commits without waiting for the write-ahead log to reach
   * disk (synchronous_commit off, for this statement only): a crash of Postgres can lose a
   * read's last use, never a message, and the read does not wait on a disk flush.
   */
  async touchAndReadEach(reads: readonly SessionRead[], now: Date, defaultTtlSeconds: number): Promise<ReadAnswer[]> {
    const rows = await TOUCH_AND_READ_EACH.run(this.db, {
      agents: reads.map((read) => read.agentId),
      sessions: reads.map((read) => read.sessionId),
      knownVersions: reads.map((read) => read.known?.version ?? 0),
      knownCreatedAts: reads.map((read) => read.known?.createdAt ?? now),
      now,
      ttl: defaultTtlSeconds,
    });
    return inCallOrder(reads.length, rows).map((row) => (row === undefined ? AGENT_GONE : row.session_id === null ? NO_SESSION : row));
  }

  /** The session's row, unlocked, expired or not: what a write that did not apply looks at to say why. */
  async find(agentId: string, sessionId: string): Promise<AgentSessionRow | undefined> {
    return this.db<AgentSessionRow>('agent_sessions').where({ agent_id: agentId, session_id: sessionId }).first();
  }

  /** The live session with the sealed appends after its base, in one statement (a fold between two would lose some), touching nothing. */
  async findLive(agentId: string, sessionId: string, now: Date): Promise<StoredSession | undefined> {
    return this.db('agent_sessions as s')
      .select(
        's.*',
        this.db.raw(`${APPENDED_SEALED_SQL} AS appended_sealed`),
      )
      .where({ 's.agent_id': agentId, 's.session_id': sessionId })
      .andWhere('s.expires_at', '>', now)
      .first() as Promise<StoredSession | undefined>;
  }

  /**
   * Appends each write's messages if its session is still live at its `version` and stays
   * within `maxBytes`, in one statement: each a compare-and-set, with no read before it and
   * no lock held after it, which seals and logs only the appended messages. One answer per
   * write, in order: the session's summary, or undefined when it did not apply (another
   * write came first, the session is gone or expired, or it would grow too large): then
   * find() tells which.
   */
  async appendEachAtVersion(appends: readonly SessionAppendAtVersion[], now: Date, defaultTtlSeconds: number, maxBytes: number): Promise<(SessionSummary | undefined)[]> {
    const rows = await APPEND_EACH_AT_VERSION.run(this.db, {
      agents: appends.map((append) => append.agentId),
      sessions: appends.map((append) => append.sessionId),
      versions: appends.map((append) => append.version),
      counts: appends.map((append) => append.messageCount),
      sealed: appends.map((append) => append.sealed),
      intoEmpty: appends.map((append) => (append.sealed === null ? 0 : append.bytes - 2)),
      intoOthers: appends.map((append) => (append.sealed === null ? 0 : append.bytes - 1)),
      now,
      ttl: defaultTtlSeconds,
      maxBytes,
    });
    return inCallOrder(appends.length, rows);
  }

  /**
   * Puts `base` in place of all the session's messages if it is still live at `version`,
   * in one statement, its appends folded away. The summary, or undefined when it did not apply.
   */
  async replaceAtVersion(agentId: string, sessionId: string, version: number, base: SessionBase, now: Date, defaultTtlSeconds: number): Promise<SessionSummary | undefined> {
    const [row] = await REPLACE_AT_VERSION.run(this.db, {
      agent: agentId,
      session: sessionId,
      version,
      now,
      ttl: defaultTtlSeconds,
      sealed: base.messages_sealed,
      bytes: base.size_bytes,
      count: base.message_count,
    });
    return row;
  }

  /**
   * Makes `sealed`, the session's messages as of `version`, its base, and deletes the appends
   * it holds, unless the session was replaced or started anew since it was read (a new
   * `created_at`). Appends after `version` stay. Whether it applied.
   */
  async compact(session: Pick<AgentSessionRow, 'agent_id' | 'session_id' | 'created_at'>, version: number, sealed: string): Promise<boolean> {
    const { rowCount } = await this.db.raw<{ rowCount: number }>(
      `WITH head AS (
         UPDATE agent_sessions SET messages_sealed = :sealed, base_version = :version
         WHERE agent_id = :agent AND session_id = :session AND created_at = :createdAt AND base_version < :version AND version >= :version
         RETURNING agent_id, session_id
       )
       DELETE FROM agent_session_appends a USING head WHERE a.agent_id = head.agent_id AND a.session_id = head.session_id AND a.version <= :version`,
      { agent: session.agent_id, session: session.session_id, createdAt: session.created_at, version, sealed },
    );
    return rowCount > 0;
  }

  /**
   * The agent's sessions of `sessionIds`, locked until the transaction ends, expired or not,
   * by id: what a group of creations finds already there.
   */
  async findEachForUpdate(agentId: string, sessionIds: readonly string[]): Promise<Map<string, AgentSessionRow>> {
    const rows = await this.db<AgentSessionRow>('agent_sessions').where({ agent_id: agentId }).whereIn('session_id', sessionIds).forUpdate();
    return new Map(rows.map((row) => [row.session_id, row]));
  }

  /**
   * Inserts the rows (all of one agent) whose ids are not taken, and counts the agent's
   * other sessions, in one statement: its snapshot does not hold the rows it inserts, so
   * the count is of the others (exact in the agent's creation turn, agentInCreationTurn,
   * taken by an earlier statement, so this one's snapshot holds every creation before it).
   * The ids inserted; one missing is taken.
   */
  async insertEachCountingOthers(rows: readonly AgentSessionRow[]): Promise<{ others: number; inserted: Set<string> }> {
    const insert = this.db('agent_sessions').insert(rows).onConflict(['agent_id', 'session_id']).ignore().returning('session_id').toSQL();
    const { rows: [counted] } = await this.db.raw<{ rows: { others: string; inserted: string[] | null }[] }>(
      `WITH inserted AS (${insert.sql})
       SELECT (SELECT count(*) FROM agent_sessions WHERE agent_id = ?) AS others, array_agg(session_id) AS inserted FROM inserted`,
      [...(insert.bindings as Knex.RawBinding[]), rows[0]!.agent_id],
    );
    return { others: Number(counted!.others), inserted: new Set(counted!.inserted ?? []) };
  }

  /** Rewrites a locked session whole, bookkeeping and created_at too (an expired row is reused as a new session), its appends gone. */
  async rewrite(row: AgentSessionRow): Promise<void> {
    const { agent_id, session_id, ...changes } = row;
    await this.db('agent_session_appends').where({ agent_id, session_id }).delete();
    await this.db('agent_sessions').where({ agent_id, session_id }).update(changes);
  }

  /** The deleted row's expiry (a caller treats an expired one as absent), or undefined when there was none. */
  async delete(agentId: string, sessionId: string): Promise<Date | undefined> {
    const [row] = await this.db('agent_sessions').where({ agent_id: agentId, session_id: sessionId }).delete().returning('expires_at');
    return row?.expires_at;
  }

  /**
   * Deletes the agent's `count` least recently used sessions but `keep` (the ones just
   * created). A session another request holds is being used right now, so it is skipped for
   * the next one rather than waited for.
   */
  async evictLeastRecentlyUsed(agentId: string, count: number, keep: readonly string[]): Promise<number> {
    return this.db('agent_sessions')
      .whereIn(
        ['agent_id', 'session_id'],
        this.db('agent_sessions')
          .select('agent_id', 'session_id')
          .where({ agent_id: agentId })
          .whereNotIn('session_id', keep)
          .orderBy([{ column: 'last_used_at' }, { column: 'session_id' }])
          .limit(count)
          .forUpdate()
          .skipLocked(),
      )
      .delete();
  }

  /** The agent's live sessions, most recently used first, without their messages. */
  async listLive(agentId: string, now: Date, offset: number, limit: number): Promise<Page<SessionSummary>> {
    // Never the messages: a page of sealed sessions would be megabytes read for nothing.
    const live = this.db<SessionSummary>('agent_sessions').where({ agent_id: agentId }).andWhere('expires_at', '>', now);
    return pageOf(live, [{ column: 'last_used_at', order: 'desc' }, { column: 'session_id', order: 'asc' }], offset, limit, SUMMARY_COLUMNS);
  }

  /** Deletes up to `limit` sessions expired at `now` (any agent's); how many went. Rows a writer holds wait for the next batch. */
  async deleteExpired(now: Date, limit: number): Promise<number> {
    return this.db('agent_sessions')
      .whereIn(['agent_id', 'session_id'], this.db('agent_sessions').select('agent_id', 'session_id').where('expires_at', '<=', now).limit(limit).forUpdate().skipLocked())
      .delete();
  }
}
