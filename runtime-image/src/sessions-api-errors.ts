/**
 * What can go wrong talking to agent services' Sessions API v1, one class per failure,
 * so the session store decides what each means: a conflict and a full session are
 * answers it acts on, the rest means the sessions cannot be served now.
 */

/** 409 SESSION_VERSION_CONFLICT: another writer moved the session past the version we read. */
export class SessionVersionConflictError extends Error {
  override readonly name = 'SessionVersionConflictError';
}

/** 413 SESSION_TOO_LARGE: the write would pass agent services' size limit; nothing was written. */
export class SessionTooLargeError extends Error {
  override readonly name = 'SessionTooLargeError';
}

/**
 * Agent services could not be reached, timed out, refused our credential, kept us
 * waiting (429) or answered something unexpected, after the retries allowed.
 * `mayHaveCommitted` is true when a write was sent and its outcome is unknown (a timeout,
 * a reset, a 5xx): it may have been applied.
 */
export class SessionsUnavailableError extends Error {
  override readonly name = 'SessionsUnavailableError';
  constructor(
    message: string,
    readonly mayHaveCommitted: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** `code` of a Sessions API error body (`{code, message}`, docs/contract.md), if it is one. */
export function errorCodeOf(body: unknown): string | undefined {
  const code = typeof body === 'object' && body !== null ? (body as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}
