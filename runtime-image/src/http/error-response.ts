import { RuntimeError, type ErrorCode } from '../errors.js';

const STATUS_OF: Readonly<Record<ErrorCode, number>> = {
  INVALID_REQUEST: 400,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PROVIDER_ERROR: 502,
  NOT_CONFIGURED: 503,
  SESSIONS_UNAVAILABLE: 503,
  SESSION_TOO_LARGE: 413,
  INTERNAL_ERROR: 500,
};

export interface ErrorResponse {
  status: number;
  body: { error: { code: ErrorCode; message: string } };
}

/** The one place errors become responses. Anything not a RuntimeError is a 500 that reveals nothing. */
export function toErrorResponse(error: unknown): ErrorResponse {
  const known = error instanceof RuntimeError ? error : new RuntimeError('INTERNAL_ERROR', 'internal error');
  return { status: STATUS_OF[known.code], body: { error: { code: known.code, message: known.message } } };
}
