import type { Logger } from 'pino';
import { sha256Hex } from '../crypto/tokens.js';
import { PlatformError, rateLimited } from '../errors.js';
import type { AuthService } from '../services/auth-service.js';
import type { Principal } from '../services/principal.js';
import type { FixedWindowLimiter } from '../services/rate-limiter.js';

export interface Authenticator {
  (authorization: string): Promise<Principal>;
}

/**
 * Bearer token → principal. The per-token rate limit is counted before the database is
 * asked, so a flood of made-up tokens costs Redis, not Postgres. If Redis is down the
 * limit is skipped (logged): the control API stays usable, and the edge is unaffected.
 */
export function bearerAuthenticator(auth: AuthService, limiter: FixedWindowLimiter, perMinute: number, logger: Logger): Authenticator {
  return async (authorization) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new PlatformError('AUTHENTICATION_FAILED', 'Send Authorization: Bearer <token>');
    const token = match[1]!;
    try {
      const decision = await limiter.hit(`token:${sha256Hex(token).slice(0, 32)}`, perMinute);
      if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
    } catch (error) {
      if (error instanceof PlatformError) throw error;
      logger.warn({ err: error }, 'token rate limit skipped: Redis unavailable');
    }
    return auth.authenticate(token);
  };
}
