import type { AuditContext } from '../domain/audit.js';
import type { Role } from '../domain/roles.js';

/** Who is calling, as established from the bearer token. */
export interface Principal {
  userId: string;
  email: string;
  accountId: string;
  role: Role;
  /** Personal API keys may not manage personal API keys: only a console session may. */
  via: 'session' | 'api_key';
  /** The session token's hash when `via` is 'session': what signing out deletes. */
  sessionHash?: string;
  /** The personal API key's id when `via` is 'api_key': the actor the audit log names. */
  apiKeyId?: string;
}

/** The audit context of a request made by `principal`: a session acts as its user, an API key as itself. */
export function auditContextOf(principal: Principal, requestId: string, ip: string): AuditContext {
  const actor =
    principal.via === 'api_key' && principal.apiKeyId
      ? { type: 'api_key' as const, id: principal.apiKeyId, email: principal.email, userId: principal.userId }
      : { type: 'user' as const, id: principal.userId, email: principal.email, userId: principal.userId };
  return { actor, requestId, ip };
}
