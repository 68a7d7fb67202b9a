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
    const message = cause.statusCode === undefined
      ? `the model provider (${name}) could not be reached${afterAttempts}`
      : `the model provider (${name}) answered HTTP ${cause.statusCode}${afterAttempts}`;
    return providerError(message, error);
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
