import type { LogQuery } from './types.js';
import { INVOCATION_ID, type LogEntry, type LogLevel } from '../domain/log-entry.js';

const PINO_LEVELS: Record<number, LogLevel> = { 10: 'debug', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' };
const NAMED_LEVELS: Record<string, LogLevel> = {
  trace: 'debug', debug: 'debug', info: 'info', notice: 'info', warn: 'warn', warning: 'warn', error: 'error', fatal: 'error', critical: 'error',
};

const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** What an entry takes from the line itself rather than from where it was read. */
export type LineFields = Pick<LogEntry, 'level' | 'invocation_id'>;

/**
 * What a line declares as JSON: its level (`{"level": "warn"}` or pino's numbers), else the
 * stream's, and the invocation it was written in, its `trace_id` (the field OpenTelemetry's
 * log data model and pino-opentelemetry name it), kept only when it is an invocation id.
 */
export function lineFields(message: string, source: 'stdout' | 'stderr'): LineFields {
  const declared = message.startsWith('{') ? parseObject(message) : undefined;
  return {
    level: declaredLevel(declared?.['level']) ?? (source === 'stderr' ? 'error' : 'info'),
    invocation_id: invocationIdOf(declared?.['trace_id']),
  };
}

function parseObject(message: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(message);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined; // not JSON after all: the line declares nothing
  }
}

function declaredLevel(level: unknown): LogLevel | undefined {
  if (typeof level === 'number') return PINO_LEVELS[level];
  // Own keys only: a level named after an Object.prototype member ("constructor") is no level.
  if (typeof level === 'string' && Object.hasOwn(NAMED_LEVELS, level.toLowerCase())) return NAMED_LEVELS[level.toLowerCase()];
  return undefined;
}

const invocationIdOf = (traceId: unknown): string | null => (typeof traceId === 'string' && INVOCATION_ID.test(traceId) ? traceId : null);

/**
 * What a log query returns of the entries read from every replica: those at or above its
 * level (and of its invocation, when it names one), ordered by id (which orders them across
 * replicas, as SSE resume needs), the newest `limit`.
 */
export function selectEntries(entries: LogEntry[], query: LogQuery): LogEntry[] {
  const minimum = LEVEL_RANK[query.level ?? 'debug'];
  return entries
    .filter((entry) => LEVEL_RANK[entry.level] >= minimum)
    .filter((entry) => query.invocationId === undefined || entry.invocation_id === query.invocationId)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(-query.limit);
}
