import { pino } from 'pino';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured fields of one log line. Callers pass ids, counts and statuses, never user text or keys. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** The runtime's narrow view of a logger: a message and flat fields, so no object graph (or secret in it) is logged. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * Writes one JSON object per line with pino, in the format the platform's log collector
 * reads from stdout and the README documents: `{level, time, message, …fields}`, the level
 * by name and the time as ISO 8601 (no pid or hostname). Lines below `minimumLevel` are dropped.
 * Each line also carries `context`'s fields (an invoke's `trace_id`, log-context.ts); a field
 * the caller gives, even as undefined, takes their place.
 */
export function createJsonLogger(
  writeLine: (line: string) => void,
  minimumLevel: LogLevel,
  clock: { now(): number } = Date,
  context: { fields(): LogFields } = { fields: () => ({}) },
): Logger {
  const logger = pino(
    {
      level: minimumLevel,
      base: undefined,
      messageKey: 'message',
      timestamp: () => `,"time":"${new Date(clock.now()).toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => context.fields(),
    },
    { write: writeLine },
  );
  const log = (level: LogLevel) => (message: string, fields: LogFields = {}) => logger[level](fields, message);
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}
