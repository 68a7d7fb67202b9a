import type { Logger } from 'pino';
import { withDeadline } from '../../contract/deadline.js';
import { sha256Hex } from '../crypto/tokens.js';
import { PlatformError, rateLimited } from '../domain/errors.js';
import type { AuthService } from '../services/auth-service.js';
import type { Principal } from '../services/principal.js';
import type { FixedWindowLimiter } from '../services/rate-limiter.js';

/** What a request presents to be authenticated: its Authorization header and, if sent, its X-Account-Id. */
export interface Credentials {
  authorization: string;
  /** The account to act in; absent: the user's default account. */
  accountId?: string;
}

export interface Authenticator {
  (credentials: Credentials): Promise<Principal>;
}

export interface TokenRateLimit {
  readonly perMinute: number;
  /** How long the count may take before the request goes on without it. */
  readonly timeoutMs: number;
}

/**
 * Bearer token → principal. The per-token rate limit is counted before the database is
 * asked, so a flood of made-up tokens costs Redis, not Postgres. If Redis is down, or
 * does not answer within `limit.timeoutMs`, the limit is skipped (logged): the control
 * API stays usable, and requests that need only Postgres are not slowed by a stalled
 * Redis. A late count still reaches Redis; only this request's verdict is given up.
 */
export function bearerAuthenticator(auth: AuthService, limiter: FixedWindowLimiter, limit: TokenRateLimit, logger: Logger): Authenticator {
  return async ({ authorization, accountId }) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new PlatformError('AUTHENTICATION_FAILED', 'Send Authorization: Bearer <token>');
    const token = match[1]!;
    try {
      const decision = await withDeadline(limiter.hit(`token:${sha256Hex(token).slice(0, 32)}`, limit.perMinute), limit.timeoutMs, 'Redis (token rate limit)');
      if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
    } catch (error) {
      if (error instanceof PlatformError) throw error;
      logger.warn({ err: error }, 'token rate limit skipped: Redis unavailable');
    }
    return auth.authenticate(token, accountId);
  };
}
