export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_SOURCES = ['stdout', 'stderr'] as const;
export type LogSource = (typeof LOG_SOURCES)[number];

/** An invocation's id, the trace id of its invoke (W3C Trace Context): 32 lowercase hex digits. */
export const INVOCATION_ID = /^[0-9a-f]{32}$/;

/** One line a replica wrote, as the drivers read it. */
export interface LogEntry {
  /** Orders entries across replicas; an SSE client resumes after it with Last-Event-ID. */
  id: string;
  agent_id: string;
  replica_id: string;
  timestamp: string;
  level: LogLevel;
  message: string;
  source: LogSource;
  /** The invocation the line was written in: a JSON line's `trace_id`, when it is an invocation id; else null. */
  invocation_id: string | null;
}

/** What GET /logs shows of an entry: its id travels only as the stream's event id. */
export type PublicLogEntry = Omit<LogEntry, 'id'>;
