import type { Role } from '../domain/roles.js';

/** Who is calling, as established from the bearer token. */
export interface Principal {
  userId: string;
  accountId: string;
  role: Role;
  /** Personal API keys may not manage personal API keys: only a console session may. */
  via: 'session' | 'api_key';
  /** The session token's hash when `via` is 'session': what signing out deletes. */
  sessionHash?: string;
}
