import type { Role } from './roles.js';

/** How a credential's user signed in: a password, or their account's identity provider. */
export type SignInMethod = 'password' | 'sso';

/** The roles a user created at first SSO sign-in may get: never owner. */
export type SsoRole = Exclude<Role, 'owner'>;

/** An account's public SSO name, in /auth/sso/{slug}/start: lowercase letters, digits and dashes. */
export const SSO_SLUG_PATTERN = '^[a-z0-9-]{3,40}$';

/** A sign-in waits this long at the provider before its state is refused. */
export const SSO_LOGIN_TTL_MS = 10 * 60_000;

/** The one-time code handed to the console or the CLI is traded at once, or not at all. */
export const SSO_HANDOFF_TTL_MS = 60_000;

/**
 * Where a CLI may have the callback send its one-time code: a loopback address with a port,
 * over http, as RFC 8252 §7.3 has native apps receive a redirect. Anything else would let a
 * crafted start link send the code to another host.
 */
export function isLoopbackRedirect(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === '[::1]') && url.port !== '' && !url.username && !url.password && !url.hash;
}

/** Whether `email`'s domain is one of `domains`, compared without case; subdomains are not included. */
export function emailDomainAllowed(email: string, domains: readonly string[]): boolean {
  const at = email.lastIndexOf('@');
  if (at < 1) return false;
  const domain = email.slice(at + 1).toLowerCase();
  return domains.some((allowed) => allowed.toLowerCase() === domain);
}

