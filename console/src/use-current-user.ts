import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from './api.js';
import type { CurrentUser } from './types.js';

/** The signed-in user as they act in the chosen account (their role there), with every account they belong to. */
export function useCurrentUser(): { me: CurrentUser | null; error: string } {
  const [me, setMe] = useState<CurrentUser | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let stopped = false;
    api<CurrentUser>('GET', '/auth/me').then((answer) => { if (!stopped) setMe(answer); }, (caught) => { if (!stopped) setError(messageOf(caught)); });
    return () => { stopped = true; };
  }, []);
  return { me, error };
}
