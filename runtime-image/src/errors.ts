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
  'INTERNAL_ERROR',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** An error whose message is safe to show the caller. */
export class RuntimeError extends Error {
  override readonly name = 'RuntimeError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const invalidRequest = (message: string) => new RuntimeError('INVALID_REQUEST', message);
export const notConfigured = (reason: string) => new RuntimeError('NOT_CONFIGURED', `the agent is not configured: ${reason}`);
export const providerError = (message: string, cause: unknown) => new RuntimeError('PROVIDER_ERROR', message, { cause });
export const internalError = (message: string, cause?: unknown) => new RuntimeError('INTERNAL_ERROR', message, { cause });
