export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured fields of one log line. Callers pass ids, counts and statuses, never user text or keys. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * Writes one JSON object per line, the format the platform's log collector
 * reads from stdout. Lines below `minimumLevel` are dropped.
 */
export function createJsonLogger(
  writeLine: (line: string) => void,
  minimumLevel: LogLevel,
  clock: { now(): number } = Date,
): Logger {
  const threshold = LOG_LEVELS.indexOf(minimumLevel);
  const log = (level: LogLevel) => (message: string, fields: LogFields = {}) => {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    const time = new Date(clock.now()).toISOString();
    writeLine(JSON.stringify({ time, level, message, ...fields }) + '\n');
  };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

export const silentLogger: Logger = createJsonLogger(() => {}, 'error');
