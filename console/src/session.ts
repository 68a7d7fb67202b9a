/** The session token: in memory, and in sessionStorage so a reload in the same tab stays signed in. */
const KEY = 'agent-platform.session';

let token: string | null = sessionStorage.getItem(KEY);
const listeners = new Set<() => void>();

export const session = {
  token: () => token,
  signIn(value: string): void {
    token = value;
    sessionStorage.setItem(KEY, value);
    listeners.forEach((listener) => listener());
  },
  signOut(): void {
    token = null;
    sessionStorage.removeItem(KEY);
    listeners.forEach((listener) => listener());
  },
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
