import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { navigate } from './router.js';
import { session } from './session.js';
import type { CurrentUser, Membership } from './types.js';

/**
 * The header's choice of account, for a user who belongs to more than one: every request
 * then sends its X-Account-Id (api.ts). A choice the API refuses (the user was removed from
 * that account meanwhile) falls back to the default account.
 */
export function AccountSwitcher() {
  const [memberships, setMemberships] = useState<Membership[]>([]);
  const [account, setAccount] = useState(session.account());
  useEffect(() => session.subscribe(() => setAccount(session.account())), []);
  useEffect(() => {
    let stopped = false;
    api<CurrentUser>('GET', '/auth/me').then(
      (me) => { if (!stopped) setMemberships(me.memberships); },
      (caught) => { if (!stopped && account && caught instanceof ApiError && caught.status === 403) session.selectAccount(null); },
    );
    return () => { stopped = true; };
  }, [account]);

  if (memberships.length < 2) return null;
  const fallback = memberships.find((membership) => membership.default)?.account_id;
  const choose = (accountId: string) => {
    session.selectAccount(accountId === fallback ? null : accountId);
    navigate('/agents');
  };
  return (
    <label class="switcher">
      <span>Account</span>
      <select value={account ?? fallback} onChange={(event) => choose(event.currentTarget.value)}>
        {memberships.map((membership) => (
          <option key={membership.account_id} value={membership.account_id}>
            {membership.account_id} ({membership.role}{membership.default ? ', default' : ''})
          </option>
        ))}
      </select>
    </label>
  );
}
