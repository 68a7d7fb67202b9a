/**
 * The runtime's error catalogue. Domain code throws these by code; only
 * http/error-response.ts knows which HTTP status each code means.
 */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'PROVIDER_ERROR',
  'NOT_CONFIGURED',
  'SESSIONS_UNAVAILABLE',
  'SESSION_TOO_LARGE',
  'INTERNAL_ERROR',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * An error whose message is safe to show the caller. `logFields` go on the request's log
 * line only: what the agent's owner needs to act (where the provider was looked for) but a
 * caller of a public agent has no business seeing.
 */
export class RuntimeError extends Error {
  override readonly name = 'RuntimeError';
  readonly logFields: Readonly<Record<string, string>>;
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; logFields?: Record<string, string> },
  ) {
    super(message, options);
    this.logFields = options?.logFields ?? {};
  }
}

export const invalidRequest = (message: string) => new RuntimeError('INVALID_REQUEST', message);
export const notConfigured = (reason: string) => new RuntimeError('NOT_CONFIGURED', `the agent is not configured: ${reason}`);
export const providerError = (message: string, cause: unknown, logFields?: Record<string, string>) => new RuntimeError('PROVIDER_ERROR', message, { cause, logFields });
export const sessionsUnavailable = (message: string, cause: unknown) => new RuntimeError('SESSIONS_UNAVAILABLE', message, { cause });
export const sessionTooLarge = (message: string) => new RuntimeError('SESSION_TOO_LARGE', message);
export const internalError = (message: string, cause?: unknown) => new RuntimeError('INTERNAL_ERROR', message, { cause });
