/**
 * The session token and the account it acts in: in memory, and in sessionStorage so a reload
 * in the same tab stays signed in, in the same account. No account chosen: the user's default
 * one (the API's choice without X-Account-Id).
 */
const KEY = 'agent-platform.session';
const ACCOUNT_KEY = 'agent-platform.account';

let token: string | null = sessionStorage.getItem(KEY);
let account: string | null = sessionStorage.getItem(ACCOUNT_KEY);
const listeners = new Set<() => void>();
const changed = () => listeners.forEach((listener) => listener());

export const session = {
  token: () => token,
  account: () => account,
  /** A new session starts in the user's default account. */
  signIn(value: string): void {
    token = value;
    account = null;
    sessionStorage.setItem(KEY, value);
    sessionStorage.removeItem(ACCOUNT_KEY);
    changed();
  },
  signOut(): void {
    token = null;
    account = null;
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(ACCOUNT_KEY);
    changed();
  },
  /** Acts in `accountId` from the next request on; null: the default account. */
  selectAccount(accountId: string | null): void {
    account = accountId;
    if (accountId) sessionStorage.setItem(ACCOUNT_KEY, accountId);
    else sessionStorage.removeItem(ACCOUNT_KEY);
    changed();
  },
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
