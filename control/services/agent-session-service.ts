import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import {
  AGENT_GONE,
  entityTagOf,
  expiryAfter,
  isLive,
  jsonBytes,
  type MessagesBudget,
  NO_SESSION,
  openedMessages,
  sessionNotFound,
  sessionTooLarge,
  versionConflict,
  type AgentSessionRow,
  type ReadAnswer,
  type SessionLimits,
  type SessionSummary,
  type SessionTag,
  type StoredSession,
} from '../domain/agent-session.js';
import { SESSION_TTL_SECONDS, sessionTtlSeconds } from '../domain/deploy.js';
import { PlatformError, validationError } from '../domain/errors.js';
import type { AgentRow } from '../domain/agent.js';
import type { SessionAppendAtVersion, SessionRead } from '../repositories/agent-sessions.js';
import { StatementBatches } from '../db/statement-batches.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { SessionWritten } from '../schemas/agent-sessions.js';
import type { LeasedWindowLimiter } from './rate-limiter.js';

export interface AgentSessionDependencies {
  db: Knex;
  box: SecretBox;
  clock: Clock;
  /** Every session call is counted: leased, so a call rarely waits on Redis for it. */
  limiter: LeasedWindowLimiter;
  limits: SessionLimits;
}

/** A session as read: its messages as the JSON text they were stored as, for the transport to send without parsing them. */
export interface SessionContents extends SessionTagged {
  messagesJson: string;
}

/** A session as a write or read leaves it, and its entity tag (entityTagOf), which the transport sends as ETag. */
export interface SessionTagged extends SessionWritten {
  entityTag: string;
}

/** A session read at the version its reader holds: everything but the messages, which the reader has. */
export interface SessionUnchanged extends SessionTagged {
  unchanged: true;
}

/** A write creating a session (expected version 0), its messages sealed. */
interface Creation {
  agentId: string;
  sessionId: string;
  base: { messages_sealed: string; size_bytes: number; message_count: number };
}

/** What a creation came to: the session written, or why not (a conflict, the agent gone, Postgres failing). */
type CreationOutcome = SessionTagged | { refused: unknown };

/** Messages as one JSON array, and how many. */
interface Messages {
  json: string;
  count: number;
}

const SECOND_MS = 1000;

/** Appends a read opens beyond the base before it folds them in: each is a decryption on every read. */
const COMPACT_AFTER_APPENDS = 16;

/**
 * How session statements are batched: two at a time of each kind, so a call that finds one
 * running still goes at once, and one batch held up by a row's lock does not stop the rest;
 * up to 100 calls or 4 MiB of sealed messages in one.
 */
const BATCHES = { maxInFlight: 2, maxCalls: 100, maxWeight: 4 * 1_048_576 };

/** Compare-and-sets of one write: each one lost to a race with the expiry is tried again, from a fresh look. */
const WRITE_ATTEMPTS = 3;

/**
 * The sessions an agent keeps through the agent services endpoint (issue 37), called with
 * the agent its replica's token names: every method is scoped to that agent, so one agent
 * never reaches another's session, whatever id it sends.
 *
 * A write to a live session is one compare-and-set statement at the version the writer
 * expects (AgentSessionRepository.appendEachAtVersion, replaceAtVersion): of two writers
 * expecting the same version exactly one wins, and versions never skip or repeat. Only a
 * write that did not apply reads the session, to say why. An append stores only its own
 * messages; reads join them to the base and fold them in now and then. A write that
 * creates a session, or a new one where one expired, takes a transaction that counts and
 * evicts. Messages are opaque and sealed; nothing here logs them.
 */
export class AgentSessionService {
  /** Reads made at once go to Postgres as one statement (StatementBatches). */
  private readonly reads: StatementBatches<SessionRead, ReadAnswer>;
  /** Appends made at once, likewise: one statement, and one commit of the write-ahead log. */
  private readonly appends: StatementBatches<SessionAppendAtVersion, SessionSummary | undefined>;
  /** Sessions created at once: one transaction, and one creation turn, per agent (createEach). */
  private readonly creations: StatementBatches<Creation, CreationOutcome>;

  constructor(private readonly deps: AgentSessionDependencies) {
    this.reads = new StatementBatches((reads) => this.repositories().agentSessions.touchAndReadEach(reads, deps.clock.now(), SESSION_TTL_SECONDS.default), BATCHES);
    this.appends = new StatementBatches(
      (appends) => this.repositories().agentSessions.appendEachAtVersion(appends, deps.clock.now(), SESSION_TTL_SECONDS.default, deps.limits.maxBytes),
      BATCHES,
      (append) => append.sealed?.length ?? 0,
    );
    this.creations = new StatementBatches((creations) => this.createEach(creations), BATCHES, (creation) => creation.base.messages_sealed.length);
  }

  /**
   * The live session; a read is a use, so its expiry moves too. When it is still the one
   * `known` names, which the reader holds, its messages are neither read nor opened. With a
   * `budget` (a batch's answer), a session it has no room for is 503 BATCH_ANSWER_FULL,
   * its messages not opened, though it was read and counted.
   */
  async get(agentId: string, sessionId: string, known?: SessionTag, budget?: MessagesBudget): Promise<SessionContents | SessionUnchanged> {
    const repos = this.repositories();
    // Counted beside the read rather than before it: a refused read has only moved the session's last use.
    const [session] = await Promise.all([this.reads.submit({ agentId, sessionId, known }), this.assertUnderRate(agentId, 'reads', this.deps.limits.readsPerSecond)]);
    if (session === AGENT_GONE) throw agentGone();
    if (session === NO_SESSION) throw sessionNotFound();
    if (session.unchanged) return { ...writtenView(session), unchanged: true };
    if (budget && !budget.claim(session.size_bytes)) {
      throw new PlatformError('BATCH_ANSWER_FULL', `This answer already holds ${this.deps.limits.maxBytes} bytes of other sessions; read this one alone`);
    }
    const messagesJson = this.openMessages(session);
    if (session.appended_sealed.length >= COMPACT_AFTER_APPENDS) await repos.agentSessions.compact(session, session.version, this.deps.box.seal(messagesJson));
    return { ...writtenView(session), messagesJson };
  }

  /** Adds `messages` after the session's own; expected version 0 creates it. */
  async append(agentId: string, sessionId: string, expectedVersion: number, messages: unknown[]): Promise<SessionTagged> {
    await this.assertUnderRate(agentId, 'writes', this.deps.limits.writesPerSecond);
    const added: Messages = { json: messagesJson(messages), count: messages.length };
    const bytes = jsonBytes(added.json);
    const append = { agentId, sessionId, version: expectedVersion, sealed: messages.length > 0 ? this.deps.box.seal(added.json) : null, bytes, messageCount: messages.length };
    const { maxBytes } = this.deps.limits;
    return this.writeAtVersion(agentId, sessionId, expectedVersion, added, {
      apply: () => this.appends.submit(append),
      // Live at the expected version, yet not applied: the messages did not fit.
      refusal: (live) => sessionTooLarge(live.size_bytes + (messages.length === 0 ? 0 : live.size_bytes <= 2 ? bytes - 2 : bytes - 1), maxBytes),
    });
  }

  /** Puts `messages` in place of all the session's (the runtime drops its oldest turns this way); expected version 0 creates it. */
  async replace(agentId: string, sessionId: string, expectedVersion: number, messages: unknown[]): Promise<SessionTagged> {
    await this.assertUnderRate(agentId, 'writes', this.deps.limits.writesPerSecond);
    const whole: Messages = { json: messagesJson(messages), count: messages.length };
    const base = this.sealedBase(whole);
    return this.writeAtVersion(agentId, sessionId, expectedVersion, whole, {
      apply: () => this.repositories().agentSessions.replaceAtVersion(agentId, sessionId, expectedVersion, base, this.deps.clock.now(), SESSION_TTL_SECONDS.default),
    });
  }

  async delete(agentId: string, sessionId: string): Promise<void> {
    await this.assertUnderRate(agentId, 'writes', this.deps.limits.writesPerSecond);
    const repos = this.repositories();
    await this.agentOf(repos.agents.findAny(agentId));
    const expiresAt = await repos.agentSessions.delete(agentId, sessionId);
    // An expired row was gone already for every reader: deleting it is the sweep's work done early, still a 404.
    if (!expiresAt || !isLive({ expires_at: expiresAt }, this.deps.clock.now())) throw sessionNotFound();
  }

  /**
   * Expected version 0 creates the session (createOrReuse). Otherwise `write.apply` is the
   * compare-and-set; when it does not apply, the session is looked at: at another version
   * or gone, the writer gets a conflict; still at the expected version, `write.refusal`.
   */
  private async writeAtVersion(
    agentId: string,
    sessionId: string,
    expectedVersion: number,
    whenNew: Messages,
    write: { apply: () => Promise<SessionSummary | undefined>; refusal?: (live: AgentSessionRow) => PlatformError },
  ): Promise<SessionTagged> {
    if (expectedVersion === 0) return this.createOrReuse(agentId, sessionId, whenNew);
    const { agentSessions } = this.repositories();
    for (let attempt = 1; attempt <= WRITE_ATTEMPTS; attempt += 1) {
      const written = await write.apply();
      if (written) return writtenView(written);
      const stored = await agentSessions.find(agentId, sessionId);
      const live = stored && isLive(stored, this.deps.clock.now()) ? stored : undefined;
      // A session gone with its agent: the token speaks for nobody any more.
      if (!live) await this.agentOf(this.repositories().agents.findAny(agentId));
      if (live?.version !== expectedVersion) throw versionConflict(expectedVersion, live?.version ?? 0);
      if (write.refusal) throw write.refusal(live);
    }
    // A session expiring between every compare-and-set and the look after it; the writer reads it again, as after any conflict.
    throw versionConflict(expectedVersion, 0);
  }

  /** A write at expected version 0: a new session, or a new one in place of one that expired (createEach). */
  private async createOrReuse(agentId: string, sessionId: string, messages: Messages): Promise<SessionTagged> {
    const outcome = await this.creations.submit({ agentId, sessionId, base: this.sealedBase(messages) });
    if ('refused' in outcome) throw outcome.refused;
    return outcome;
  }

  /**
   * Creations made at once, one transaction per agent (and per SESSIONS_MAX_PER_AGENT of
   * them, so that a group never evicts its own). Each answers with the session written, or
   * the conflict it met.
   */
  private async createEach(creations: Creation[]): Promise<CreationOutcome[]> {
    const groups = new Map<string, Creation[]>();
    for (const creation of creations) groups.set(creation.agentId, [...(groups.get(creation.agentId) ?? []), creation]);
    const outcomes = new Map<Creation, CreationOutcome>();
    await Promise.all(
      [...groups.values()].map(async (group) => {
        for (let from = 0; from < group.length; from += this.deps.limits.maxPerAgent) {
          const part = group.slice(from, from + this.deps.limits.maxPerAgent);
          // One agent's failure (gone, or Postgres failing its transaction) is its creations' alone.
          const answered = await this.createInOneTransaction(part).catch((error: unknown) => part.map(() => ({ refused: error })));
          answered.forEach((outcome, index) => outcomes.set(part[index]!, outcome));
        }
      }),
    );
    return creations.map((creation) => outcomes.get(creation)!);
  }

  /**
   * Creations of one agent's sessions, in one transaction of four round trips: the agent
   * with its creation turn, which keeps the count exact; one insert of every id, which
   * counts the agent's other sessions in the same statement; only an agent past
   * SESSIONS_MAX_PER_AGENT evicts before the commit. So fifty new conversations of one agent
   * at once take one turn, not fifty one after another. An id the insert finds taken is
   * looked at under a lock: live, it is a conflict; expired, it is started anew in place. Of
   * two creations of one id, the second meets the first's session, as it would alone.
   */
  private createInOneTransaction(group: Creation[]): Promise<CreationOutcome[]> {
    const { agentId } = group[0]!;
    return inTransaction(this.deps.db, async (repos) => {
      const agent = await this.agentOf(repos.agentSessions.agentInCreationTurn(agentId));
      const now = this.deps.clock.now();
      const rowOf = ({ sessionId, base }: Creation): AgentSessionRow => ({
        agent_id: agentId,
        session_id: sessionId,
        version: 1,
        base_version: 1,
        ...base,
        created_at: now,
        last_used_at: now,
        expires_at: expiryAfter(now, sessionTtlSeconds(agent.deploy)),
      });
      const firsts = new Map<string, AgentSessionRow>();
      for (const creation of group) if (!firsts.has(creation.sessionId)) firsts.set(creation.sessionId, rowOf(creation));
      const outcomes = new Map<string, CreationOutcome>();
      const { others, inserted } = await repos.agentSessions.insertEachCountingOthers([...firsts.values()]);
      const taken = [...firsts.keys()].filter((sessionId) => !inserted.has(sessionId));
      const existing = taken.length > 0 ? await repos.agentSessions.findEachForUpdate(agentId, taken) : new Map<string, AgentSessionRow>();
      for (const [sessionId, row] of firsts) {
        const stored = existing.get(sessionId);
        if (inserted.has(sessionId)) outcomes.set(sessionId, writtenView(row));
        // Deleted since the insert met it (by its owner, or swept as expired): the writer reads again, as after any conflict.
        else if (!stored) outcomes.set(sessionId, { refused: versionConflict(0, 0) });
        else if (isLive(stored, now)) outcomes.set(sessionId, { refused: versionConflict(0, stored.version) });
        else {
          // An expired row is a session gone: writing the id again starts a new one in its place.
          await repos.agentSessions.rewrite(row);
          outcomes.set(sessionId, writtenView(row));
        }
      }
      const excess = others + inserted.size - this.deps.limits.maxPerAgent;
      if (excess > 0) await repos.agentSessions.evictLeastRecentlyUsed(agentId, excess, [...inserted]);
      const seen = new Set<string>();
      return group.map(({ sessionId }) => {
        const outcome = outcomes.get(sessionId)!;
        if (!seen.has(sessionId)) {
          seen.add(sessionId);
          return outcome;
        }
        return 'refused' in outcome ? outcome : { refused: versionConflict(0, outcome.version) };
      });
    });
  }

  /** Messages as a session's sealed base, refused past SESSION_MAX_BYTES. */
  private sealedBase(messages: Messages) {
    const size = jsonBytes(messages.json);
    if (size > this.deps.limits.maxBytes) throw sessionTooLarge(size, this.deps.limits.maxBytes);
    return { messages_sealed: this.deps.box.seal(messages.json), size_bytes: size, message_count: messages.count };
  }

  /** The base's messages followed by each append's, as one JSON array. */
  private openMessages(session: StoredSession): string {
    const { box } = this.deps;
    return openedMessages((sealed) => box.open(sealed), session);
  }

  /** Fixed one-second windows in Redis, shared by every copy of the control API in leases, as the edge counts its limits. */
  private async assertUnderRate(agentId: string, what: 'reads' | 'writes', perSecond: number): Promise<void> {
    const decision = await this.deps.limiter.hit(`agent-sessions:${what}:${agentId}`, perSecond, SECOND_MS);
    if (decision.allowed) return;
    throw new PlatformError('SESSION_RATE_LIMITED', `The agent ${what} sessions more than ${perSecond} times a second; retry in ${decision.retryAfterSeconds} s`, {
      retry_after: decision.retryAfterSeconds,
    });
  }

  private repositories(): Repositories {
    return repositoriesOn(this.deps.db);
  }

  /** A token outlives the agent it was issued for by up to its TTL: then it authenticates nothing. */
  private async agentOf(found: Promise<AgentRow | undefined>): Promise<AgentRow> {
    const agent = await found;
    if (!agent) throw agentGone();
    return agent;
  }
}

const agentGone = () => new PlatformError('UNAUTHENTICATED', 'The agent this token was issued for no longer exists');

/**
 * Messages as the JSON they are stored as. JSON.parse takes nesting of any depth, but
 * JSON.stringify recurses, and a message nested a few thousand levels deep throws
 * RangeError: a 422 for the body, not a 500 that pages operators.
 */
function messagesJson(messages: unknown[]): string {
  try {
    return JSON.stringify(messages);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw validationError([{ loc: ['body', 'messages'], msg: 'nested too deeply to be stored', type: 'value_error.depth' }]);
  }
}

function writtenView(row: SessionSummary): SessionTagged {
  return { session_id: row.session_id, version: row.version, size_bytes: row.size_bytes, expires_at: row.expires_at.toISOString(), entityTag: entityTagOf(row) };
}
