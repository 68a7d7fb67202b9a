import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Clock } from '../../contract/clock.js';

/**
 * The algorithms Nomad signs workload identities with, and the only ones accepted: RS256
 * when the root key has an RSA key (every key made since Nomad 1.7), EdDSA (Ed25519)
 * otherwise (hashicorp/nomad nomad/encrypter.go, `Encrypter.SignClaims`;
 * nomad/structs/keyring.go, `PubKeyAlgRS256`, `PubKeyAlgEdDSA`). Never `none`, never an
 * HMAC: a public key must not double as a shared secret.
 */
export type SigningAlgorithm = 'RS256' | 'EdDSA';

export interface VerificationKey {
  alg: SigningAlgorithm;
  key: KeyObject;
}

/** Nomad makes 2048-bit RSA keys (nomad/structs/keyring.go, `NewUnwrappedRootKey`); a weaker one is not taken from anywhere. */
const MIN_RSA_BITS = 2048;

/**
 * The usable signing keys of a JWKS document (RFC 7517), by `kid`. Nomad's
 * `/.well-known/jwks.json` lists every root key not deprecated as go-jose's JSONWebKey:
 * `{kid, alg, use: "sig", kty: "RSA", n, e}` or `{…, kty: "OKP", crv: "Ed25519", x}`
 * (command/agent/keyring_endpoint.go, `JWKSRequest`). A key of another kind, or whose
 * `alg` does not match its type, is left out rather than failing the whole set.
 */
export function parseKeySet(document: unknown): Map<string, VerificationKey> {
  const keys = new Map<string, VerificationKey>();
  const listed = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(listed)) return keys;
  for (const entry of listed as Record<string, unknown>[]) {
    if (!entry || typeof entry !== 'object' || typeof entry.kid !== 'string' || entry.kid === '') continue;
    if (entry.use !== undefined && entry.use !== 'sig') continue;
    const key = publicKeyOf(entry);
    if (key) keys.set(entry.kid, key);
  }
  return keys;
}

function publicKeyOf(jwk: Record<string, unknown>): VerificationKey | null {
  // Only the public members are handed to createPublicKey: a set that leaked a private
  // member (`d`) is still read as the public key it names.
  const material: JsonWebKey | null =
    jwk.alg === 'RS256' && jwk.kty === 'RSA' && typeof jwk.n === 'string' && typeof jwk.e === 'string'
      ? { kty: 'RSA', n: jwk.n, e: jwk.e }
      : jwk.alg === 'EdDSA' && jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && typeof jwk.x === 'string'
        ? { kty: 'OKP', crv: 'Ed25519', x: jwk.x }
        : null;
  if (!material) return null;
  try {
    const key = createPublicKey({ key: material, format: 'jwk' });
    if (jwk.alg === 'RS256' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS) return null;
    return { alg: jwk.alg as SigningAlgorithm, key };
  } catch {
    return null;
  }
}

export interface KeySetTiming {
  /**
   * Least time between two fetches, whatever asks: a flood of tokens naming unknown key
   * ids costs the key set's server one request per this long, not one per token.
   */
  minRefetchMs: number;
  /** A set older than this is fetched again at the next lookup, so a key the server dropped stops verifying. */
  maxAgeMs: number;
}

/**
 * A JWKS kept in memory and fetched again only when it must be, as Nomad asks of its
 * consumers: "Consumers should cache this endpoint, preferably until an unknown kid is
 * encountered" (command/agent/keyring_endpoint.go, `JWKSRequest`). A lookup of a key id
 * the set lacks fetches it again (a rotation's new key), as does a lookup once the set is
 * older than `maxAgeMs`; either at most once per `minRefetchMs`, one fetch at a time. A
 * failed fetch keeps the keys held, so an unreachable server refuses only new key ids.
 */
export class KeySetCache {
  private keys = new Map<string, VerificationKey>();
  private fetchedAt: number | null = null;
  private attemptedAt: number | null = null;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly fetchKeySet: () => Promise<unknown>,
    private readonly clock: Clock,
    private readonly timing: KeySetTiming,
    private readonly onFetchFailed: (error: unknown) => void,
  ) {}

  async keyFor(kid: string): Promise<VerificationKey | null> {
    const now = this.clock.now().getTime();
    const stale = this.fetchedAt === null || now - this.fetchedAt >= this.timing.maxAgeMs;
    const mayFetch = this.attemptedAt === null || now - this.attemptedAt >= this.timing.minRefetchMs;
    if (this.inFlight) await this.inFlight;
    else if ((stale || !this.keys.has(kid)) && mayFetch) await this.refresh(now);
    return this.keys.get(kid) ?? null;
  }

  private refresh(now: number): Promise<void> {
    this.attemptedAt = now;
    this.inFlight = this.fetchKeySet()
      .then((document) => {
        this.keys = parseKeySet(document);
        this.fetchedAt = now;
      })
      .catch(this.onFetchFailed)
      .finally(() => (this.inFlight = null));
    return this.inFlight;
  }
}
