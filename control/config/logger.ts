import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

/**
 * JSON lines on stdout. Redaction is a second line of defence: no code path logs a
 * request body or header, but a secret that slips into an error object is censored.
 */
export function createLogger(level: LogLevel, name = 'control'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['*.authorization', '*.password', '*.api_key', '*.key', '*.token', '*.value', 'headers.authorization', 'err.config'],
      censor: '[redacted]',
    },
  });
}
