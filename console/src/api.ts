import { session } from './session.js';

/** An answer of the API other than 2xx, with the API's own message to show where the action was taken. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** What every request of the console presents: the session token, and the account chosen in the header's switcher. */
export function credentials(): Record<string, string> {
  const token = session.token();
  const account = session.account();
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(token && account ? { 'x-account-id': account } : {}) };
}

/** Calls /v1 with the session token; an expired session (401) signs out. */
export async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const token = session.token();
  const response = await fetch(`/v1${path}`, {
    method,
    headers: { ...credentials(), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    const error = parsed ?? {};
    if (response.status === 401 && token && path !== '/auth/login') session.signOut();
    throw new ApiError(response.status, error.code ?? 'HTTP_ERROR', error.message ?? `The API answered ${response.status}`);
  }
  return parsed as T;
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
