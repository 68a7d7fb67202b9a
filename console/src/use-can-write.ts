import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import type { User } from './types.js';

/**
 * Whether the signed-in user may change the account's agents: every role but viewer
 * (control/domain/roles.ts). null until `GET /auth/me` answers; false when it fails, so a
 * control shown only to writers stays hidden. The API refuses a viewer's change all the same
 * (403): this only keeps out of sight a button that could only fail.
 */
export function useCanWrite(): boolean | null {
  const [canWrite, setCanWrite] = useState<boolean | null>(null);
  useEffect(() => {
    let stopped = false;
    api<User>('GET', '/auth/me').then((user) => user.role !== 'viewer', () => false).then((answer) => { if (!stopped) setCanWrite(answer); });
    return () => { stopped = true; };
  }, []);
  return canWrite;
}
