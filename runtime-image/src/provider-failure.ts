import {
  APICallError,
  EmptyResponseBodyError,
  InvalidResponseDataError,
  JSONParseError,
  NoContentGeneratedError,
  RetryError,
  TypeValidationError,
} from 'ai';
import { providerError, type RuntimeError } from './errors.js';
import { displayName, type Provider } from './providers.js';

/**
 * Turns a failure of the `ai` SDK into PROVIDER_ERROR when the provider is to
 * blame. Messages give the provider's status, never its body: a provider's
 * error text can echo part of the key.
 */
export function classifyProviderFailure(error: unknown, provider: Provider, timeoutMs: number): RuntimeError | undefined {
  const name = displayName(provider);
  const attempts = RetryError.isInstance(error) ? error.errors.length : 1;
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  const afterAttempts = attempts > 1 ? ` after ${attempts} attempts` : '';

  if (APICallError.isInstance(cause)) {
    if (cause.statusCode !== undefined) return providerError(`the model provider (${name}) answered HTTP ${cause.statusCode}${afterAttempts}`, error);
    // The caller learns how it failed; the owner's log also says where it was looked for,
    // the first thing to check when a base URL points at a host the network refuses.
    const code = networkCodeOf(cause.cause);
    const origin = originOf(cause.url);
    return providerError(
      `the model provider (${name}) could not be reached${code === undefined ? '' : ` (${code})`}${afterAttempts}`,
      error,
      origin === undefined ? {} : { provider_origin: origin },
    );
  }
  if (cause instanceof Error && cause.name === 'TimeoutError') {
    return providerError(`the model provider (${name}) did not answer within ${timeoutMs} ms`, error);
  }
  if (
    TypeValidationError.isInstance(cause) ||
    JSONParseError.isInstance(cause) ||
    InvalidResponseDataError.isInstance(cause) ||
    EmptyResponseBodyError.isInstance(cause) ||
    NoContentGeneratedError.isInstance(cause)
  ) {
    return providerError(`the model provider (${name}) sent a response that could not be understood`, error);
  }
  return undefined;
}

/** The first system error code (ECONNREFUSED, ENOTFOUND, …) along a fetch failure's causes. */
function networkCodeOf(error: unknown): string | undefined {
  for (let link = error, depth = 0; link !== undefined && link !== null && depth < 5; depth += 1) {
    const code = typeof link === 'object' && 'code' in link ? link.code : undefined;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    link = link instanceof Error ? link.cause : undefined;
  }
  return undefined;
}

/** Scheme, host and port only: never a path or credentials a base URL might carry. */
function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
