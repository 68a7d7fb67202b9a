import { ACME_CHALLENGE_PATH } from '../contract/edge-keys.js';

/**
 * An HTTP-01 token (RFC 8555 §8.3: base64url, at least 128 bits of entropy). Anything else
 * under the challenge path is answered 404 without asking Redis, and never becomes part of a key.
 */
const TOKEN = /^[A-Za-z0-9_-]{16,256}$/;

/** The token a challenge path names (`/.well-known/acme-challenge/<token>`, query ignored), or null. Pure. */
export function challengeTokenOf(path: string): string | null {
  if (!path.startsWith(ACME_CHALLENGE_PATH)) return null;
  const rest = path.slice(ACME_CHALLENGE_PATH.length);
  const query = rest.search(/[?#]/);
  const token = query === -1 ? rest : rest.slice(0, query);
  return TOKEN.test(token) ? token : null;
}
