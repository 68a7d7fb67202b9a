import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Who a replica token speaks for: the agent scopes every call, the replica names the caller in logs. */
export interface AgentCredential {
  agentId: string;
  replicaId: string;
}

/** A credential as a token proved it, and until when the token holds. */
export interface VerifiedCredential extends AgentCredential {
  validUntil: Date;
}

export interface MintedAgentToken {
  token: string;
  expiresAt: Date;
}

const VERSION = 'ast1';
/** How every token of this module starts, and no Nomad JWT does (its header is base64url JSON, `eyJ…`). */
export const AGENT_TOKEN_PREFIX = `${VERSION}.`;
/** Far above any token this module mints; a longer one is refused before any work is done on it. */
const MAX_TOKEN_LENGTH = 2048;
// HKDF's salt and info bind the derived key to this one use: a key derived for anything else never verifies a token.
const HKDF_SALT = Buffer.from('agent-platform/agent-services');
const HKDF_INFO = Buffer.from(`replica-token/${VERSION}`);

interface Claims {
  /** The agent's id. */
  a: string;
  /** The replica's id. */
  r: string;
  /** Expiry, Unix seconds. */
  e: number;
}

/**
 * The credential a replica presents to the agent services endpoint (issue 37):
 * `ast1.<base64url(JSON {a, r, e})>.<base64url(HMAC-SHA256 of "ast1.<payload>")>`.
 *
 * The HMAC key is derived with HKDF from the master keys the platform already has, so every
 * copy of the control API mints and verifies the same tokens and no new secret has to be
 * configured, stored or rotated (docs/decisions.md, "Sessions in Postgres, sealed"). The
 * current key signs; every configured key verifies, so a master-key rotation does not cut
 * off replicas holding a token signed under the key before. Nothing is stored per token:
 * a token is good until its expiry, which is why it is short-lived and renewed by the
 * drivers (a file per replica, rewritten before it runs out).
 *
 * It lives in control/crypto/, below every layer, so a driver can mint tokens without
 * importing the services.
 */
export class AgentTokens {
  /** KeyObjects made once: given a Buffer, every HMAC imported the key again (12 µs a MAC here, against 2), twice per invoke's session calls. */
  private readonly keys: readonly KeyObject[];

  /** `masterKeys`: as configured, the current one first. */
  constructor(masterKeys: readonly Buffer[], private readonly ttlSeconds: number) {
    if (masterKeys.length === 0) throw new Error('AgentTokens needs at least one master key');
    this.keys = masterKeys.map((key) => createSecretKey(Buffer.from(hkdfSync('sha256', key, HKDF_SALT, HKDF_INFO, 32))));
  }

  /** A token for `replicaId` of `agentId`, valid from `now` for the configured time to live. */
  mint(agentId: string, replicaId: string, now: Date): MintedAgentToken {
    const expiry = Math.floor(now.getTime() / 1000) + this.ttlSeconds;
    const claims: Claims = { a: agentId, r: replicaId, e: expiry };
    const signed = `${VERSION}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return { token: `${signed}.${mac(this.keys[0]!, signed)}`, expiresAt: new Date(expiry * 1000) };
  }

  /** The token's agent and replica, and its expiry, or null when it is malformed, signed by no configured key, or expired at `now`. */
  verify(token: string, now: Date): VerifiedCredential | null {
    if (token.length > MAX_TOKEN_LENGTH) return null;
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) return null;
    const signed = `${parts[0]}.${parts[1]}`;
    // The MAC is compared as the text mac() writes, so only its one canonical base64url spelling passes.
    const given = Buffer.from(parts[2]!);
    if (!this.keys.some((key) => sameBytes(given, Buffer.from(mac(key, signed))))) return null;
    const claims = parseClaims(parts[1]!);
    if (!claims || claims.e * 1000 <= now.getTime()) return null;
    return { agentId: claims.a, replicaId: claims.r, validUntil: new Date(claims.e * 1000) };
  }
}

const mac = (key: KeyObject, signed: string): string => createHmac('sha256', key).update(signed).digest('base64url');

/** Constant time for equal lengths; a length says nothing secret (every MAC has the same). */
const sameBytes = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

/** Read only after the MAC matched, so this parses what the platform itself wrote; checked all the same. */
function parseClaims(payload: string): Claims | null {
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<Claims>;
    const valid = typeof claims.a === 'string' && claims.a !== '' && typeof claims.r === 'string' && Number.isInteger(claims.e);
    return valid ? (claims as Claims) : null;
  } catch {
    return null;
  }
}
