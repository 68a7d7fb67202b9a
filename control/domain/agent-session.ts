import { PlatformError } from './errors.js';

/**
 * A conversation an agent keeps through the agent services endpoint (issue 37): messages
 * the platform stores for the agent and never reads (docs/contract.md, "Sessions API v1").
 */

/**
 * What an agent names a session by: unique within its agent only, so another agent's same
 * id is another session. Not `.` or `..`, which a URL path (`/v1/sessions/{id}`) reads as a step.
 */
export const SESSION_ID_PATTERN = '^(?!\\.{1,2}$)[A-Za-z0-9._:-]{1,128}$';
const SESSION_ID = new RegExp(SESSION_ID_PATTERN);

export const isSessionId = (value: string): boolean => SESSION_ID.test(value);

/** The platform's bounds on what one agent stores (settings SESSION_MAX_BYTES, SESSIONS_MAX_PER_AGENT, SESSION_WRITES_PER_SECOND, SESSION_READS_PER_SECOND). */
export interface SessionLimits {
  /** Bytes of one session's messages as JSON, before sealing. */
  readonly maxBytes: number;
  readonly maxPerAgent: number;
  readonly writesPerSecond: number;
  readonly readsPerSecond: number;
}

/** A session as stored: the messages' JSON array sealed with the master keys, and what can be known without opening it. */
export interface AgentSessionRow {
  agent_id: string;
  session_id: string;
  /** 1 after the write that created it, one more with every write. */
  version: number;
  /** The messages as of `base_version`: those of agent_session_appends after it follow them. */
  messages_sealed: string;
  base_version: number;
  /** UTF-8 bytes of the messages' JSON, before sealing: what SESSION_MAX_BYTES bounds. */
  size_bytes: number;
  message_count: number;
  created_at: Date;
  last_used_at: Date;
  expires_at: Date;
}

/** Everything but the messages: what the owner's listing shows, and what a write answers with. */
export type SessionSummary = Omit<AgentSessionRow, 'messages_sealed' | 'base_version'>;

/** A live session as read: its base and, in order, the sealed messages of each append after it. */
export interface StoredSession extends AgentSessionRow {
  appended_sealed: string[];
}

/**
 * Which messages a reader holds: a session's version, and its creation, which tells it from
 * a session started anew under the same id after it expired or was deleted.
 */
export interface SessionTag {
  version: number;
  createdAt: Date;
}

/** A session's entity tag (ETag): `"<version>.<created_at in Unix ms>"`, which names its messages exactly. */
export const entityTagOf = (session: Pick<AgentSessionRow, 'version' | 'created_at'>): string => `"${session.version}.${session.created_at.getTime()}"`;

/** The tag an If-None-Match holds when it holds exactly one of ours (RFC 9110 §13.1.2: weak comparison, so W/ is ignored); undefined for anything else. */
export function sessionTagOf(header: string | string[] | undefined): SessionTag | undefined {
  const match = typeof header === 'string' ? /^\s*(?:W\/)?"([1-9][0-9]{0,9})\.([0-9]{1,15})"\s*$/.exec(header) : null;
  if (!match) return undefined;
  const version = Number(match[1]);
  const createdAt = new Date(Number(match[2]));
  return version <= 2 ** 31 - 1 && !Number.isNaN(createdAt.getTime()) ? { version, createdAt } : undefined;
}

/**
 * A live session as a read finds it: with its messages, or, when it is still the session and
 * version the reader says it holds (If-None-Match), without them, since the reader has them.
 */
export type ReadSession = (StoredSession & { unchanged: false }) | (SessionSummary & { base_version: number; unchanged: true });

/** A read of an id the agent has no live session by: a new conversation, or one that expired or was deleted. */
export const NO_SESSION = 'no-session';
/** A read for an agent that no longer exists: its token speaks for nobody. */
export const AGENT_GONE = 'agent-gone';
/** What a read finds. */
export type ReadAnswer = ReadSession | typeof NO_SESSION | typeof AGENT_GONE;

/** A session past its expiry is gone to every reader, whether or not the sweep has deleted its row yet. */
export const isLive = (session: Pick<AgentSessionRow, 'expires_at'>, now: Date): boolean => session.expires_at.getTime() > now.getTime();

/** Last use plus the agent's TTL: every read and write moves it. */
export const expiryAfter = (lastUse: Date, ttlSeconds: number): Date => new Date(lastUse.getTime() + ttlSeconds * 1000);

/**
 * The JSON arrays `arrays` as one, their items in order, spliced as text: the stored
 * messages are never parsed, only opened, joined and sealed. One join, so the text is
 * copied once however many arrays there are (splicing them two at a time copied the
 * growing whole at each step).
 */
export function concatenatedJsonArrays(arrays: readonly string[]): string {
  const items = arrays.filter((array) => array !== '[]').map((array) => array.slice(1, -1));
  return `[${items.join(',')}]`;
}

/** The session's messages as one JSON array: its base, then each append after it, each opened with `open`. */
export const openedMessages = (open: (sealed: string) => string, session: Pick<StoredSession, 'messages_sealed' | 'appended_sealed'>): string =>
  concatenatedJsonArrays([open(session.messages_sealed), ...session.appended_sealed.map(open)]);

export const jsonBytes = (json: string): number => Buffer.byteLength(json, 'utf8');

export const sessionNotFound = () => new PlatformError('SESSION_NOT_FOUND', 'The agent has no such session, or it expired');

/** `current_version` is what the writer should read (or expect) instead. */
export const versionConflict = (expected: number, current: number) =>
  new PlatformError('SESSION_VERSION_CONFLICT', `The session is at version ${current}, not ${expected}`, { current_version: current });

export const sessionTooLarge = (sizeBytes: number, maxBytes: number) =>
  new PlatformError('SESSION_TOO_LARGE', `The session's messages would take ${sizeBytes} bytes, past the limit of ${maxBytes}; drop its oldest turns (replace it) and write again`, {
    size_bytes: sizeBytes,
    max_bytes: maxBytes,
  });

/**
 * How many bytes of sessions' messages one answer may still carry: the first session
 * always, then others while they add up to `maxBytes`. A batch of reads (POST /v1/batch)
 * takes one, and each read claims its session's size before its messages are opened, so
 * neither what the answer holds nor what the control API decrypts for it grows with the
 * number of calls.
 */
export class MessagesBudget {
  private first = true;

  constructor(private left: number) {}

  /** Whether a session of `bytes` fits; if so, it is counted. */
  claim(bytes: number): boolean {
    if (this.first) {
      this.first = false;
      return true;
    }
    if (bytes > this.left) return false;
    this.left -= bytes;
    return true;
  }
}
