import type { LogQuery } from './types.js';
import type { LogEntry, LogLevel } from '../domain/log-entry.js';

const PINO_LEVELS: Record<number, LogLevel> = { 10: 'debug', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' };
const NAMED_LEVELS: Record<string, LogLevel> = {
  trace: 'debug', debug: 'debug', info: 'info', notice: 'info', warn: 'warn', warning: 'warn', error: 'error', fatal: 'error', critical: 'error',
};

const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** The level a line declares as JSON (`{"level": "warn"}` or pino's numbers), else by its stream. */
export function levelOf(message: string, source: 'stdout' | 'stderr'): LogLevel {
  if (message.startsWith('{')) {
    try {
      const level = (JSON.parse(message) as { level?: unknown }).level;
      if (typeof level === 'number' && PINO_LEVELS[level]) return PINO_LEVELS[level];
      if (typeof level === 'string' && NAMED_LEVELS[level.toLowerCase()]) return NAMED_LEVELS[level.toLowerCase()]!;
    } catch {
      // not JSON after all: fall through to the stream's level
    }
  }
  return source === 'stderr' ? 'error' : 'info';
}

/**
 * What a log query returns of the entries read from every replica: those at or above its
 * level, ordered by id (which orders them across replicas, as SSE resume needs), the
 * newest `limit`.
 */
export function selectEntries(entries: LogEntry[], query: LogQuery): LogEntry[] {
  const minimum = LEVEL_RANK[query.level ?? 'debug'];
  return entries
    .filter((entry) => LEVEL_RANK[entry.level] >= minimum)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(-query.limit);
}
