import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

/**
 * The account key and the JSON Web Signatures ACME requests carry (RFC 8555 §6.2): ES256
 * over P-256, flattened JSON serialization, the key itself (`jwk`) on newAccount and the
 * account URL (`kid`) on everything after.
 */

/** An EC public key as a JWK: only the members RFC 7638 §3.2 hashes for a thumbprint. */
export interface EcPublicJwk {
  crv: 'P-256';
  kty: 'EC';
  x: string;
  y: string;
}

/** RFC 7515 §7.2.2's flattened JWS JSON serialization, ACME's only accepted form (RFC 8555 §6.2). */
export interface FlattenedJws {
  protected: string;
  payload: string;
  signature: string;
}

/** Who signs: the key itself (newAccount, RFC 8555 §6.2) or the account's URL (everything else). */
export type JwsSigner = { jwk: EcPublicJwk } | { kid: string };

/** A fresh P-256 account key: ES256 is the one algorithm every ACME server must accept (RFC 8555 §6.2). */
export function generateAccountKey(): KeyObject {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
}

/** Throws unless `key` is a P-256 private key, without naming any of its material. */
export function assertP256PrivateKey(key: KeyObject, what: string): void {
  if (key.type !== 'private' || key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new TypeError(`${what} must be an EC P-256 private key (it is a ${key.type} ${key.asymmetricKeyType ?? 'symmetric'} key${key.asymmetricKeyDetails?.namedCurve ? ` on ${key.asymmetricKeyDetails.namedCurve}` : ''})`);
  }
}

export function publicJwk(key: KeyObject): EcPublicJwk {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || !jwk.x || !jwk.y) throw new TypeError('the account key is no EC P-256 key');
  // Only the public members: the private one (`d`) must never reach a header.
  return { crv: 'P-256', kty: 'EC', x: jwk.x, y: jwk.y };
}

/** RFC 7638 §3: SHA-256 over the required members, in lexicographic order, no whitespace. */
export function jwkThumbprint(key: KeyObject): string {
  const { crv, kty, x, y } = publicJwk(key);
  return createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest('base64url');
}

/** What HTTP-01 serves for a token (RFC 8555 §8.1): the token, a dot, the account key's thumbprint. */
export function keyAuthorization(token: string, accountKey: KeyObject): string {
  return `${token}.${jwkThumbprint(accountKey)}`;
}

/**
 * A request body signed with the account key. `payload` is JSON, or `''` for POST-as-GET,
 * whose payload is the empty string, not `{}` (RFC 8555 §6.3).
 */
export function signJws(accountKey: KeyObject, header: { url: string; nonce: string; signer: JwsSigner }, payload: unknown | ''): FlattenedJws {
  const protectedHeader = { alg: 'ES256', nonce: header.nonce, url: header.url, ...header.signer };
  const encodedProtected = Buffer.from(JSON.stringify(protectedHeader)).toString('base64url');
  const encodedPayload = payload === '' ? '' : Buffer.from(JSON.stringify(payload)).toString('base64url');
  // JWS wants R || S, 32 bytes each (RFC 7518 §3.4), not the DER node signs by default.
  const signature = sign('sha256', Buffer.from(`${encodedProtected}.${encodedPayload}`), { key: accountKey, dsaEncoding: 'ieee-p1363' });
  return { protected: encodedProtected, payload: encodedPayload, signature: signature.toString('base64url') };
}
