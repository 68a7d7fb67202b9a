import { useCurrentUser } from './use-current-user.js';

/**
 * Whether the signed-in user may change the account's agents: every role but viewer
 * (control/domain/roles.ts). null until `GET /auth/me` answers; false when it fails, so a
 * control shown only to writers stays hidden. The API refuses a viewer's change all the same
 * (403): this only keeps out of sight a button that could only fail.
 */
export function useCanWrite(): boolean | null {
  const { me, error } = useCurrentUser();
  if (error) return false;
  return me && me.role !== 'viewer';
}
