import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';

/**
 * JSON lines on stdout. Redaction is a second line of defence: no code path logs a
 * request body or header, but a secret that slips into an error object is censored.
 * `destination`: elsewhere than stdout (a test that reads what was logged).
 */
export function createLogger(level: LogLevel, name = 'control', destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    redact: {
      paths: ['*.authorization', '*.password', '*.api_key', '*.key', '*.token', '*.value', 'headers.authorization', 'err.config'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
