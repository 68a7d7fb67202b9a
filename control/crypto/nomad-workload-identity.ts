import { verify } from 'node:crypto';
import type { SigningAlgorithm, VerificationKey } from './json-web-key-set.js';

/**
 * What a verified Nomad workload identity says of the task holding it: the claims Nomad
 * puts in every one (hashicorp/nomad nomad/structs/workload_id.go,
 * `WorkloadIdentityClaims`: `nomad_namespace`, `nomad_job_id`, `nomad_allocation_id`, and
 * `nomad_task` for a task's identity; `WorkloadIdentityClaimsBuilder.Build` fills them from
 * the allocation and its job).
 */
export interface WorkloadIdentity {
  namespace: string;
  /** The job's id, or its parent's for a dispatched or periodic child (nomad/structs/structs.go, `Job.GetIDforWorkloadIdentity`). */
  jobId: string;
  allocationId: string;
  /** Null for a service's identity, which names no task. */
  task: string | null;
  /** Until when it is accepted: `exp` and the leeway. */
  validUntil: Date;
}

export interface IdentityExpectations {
  /** Must be one of the token's `aud`: the identity block's `aud`, which names who may take it. */
  audience: string;
  now: Date;
}

/** The signing key of a key id, or null when the issuer has none by that id. */
export type KeyLookup = (kid: string) => Promise<VerificationKey | null>;

/**
 * Clock skew allowed on `exp`, `nbf` and `iat`: go-jose's `DefaultLeeway` (jwt/validation.go,
 * one minute), what Nomad's own check of its identities allows (nomad/encrypter.go,
 * `Encrypter.VerifyClaim`, `claims.Validate`).
 */
const LEEWAY_SECONDS = 60;
/** An RS256 identity is about 1 KiB; anything far longer is refused before it is decoded. */
const MAX_TOKEN_LENGTH = 16 * 1024;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** node:crypto's digest for each algorithm: SHA-256 with PKCS #1 v1.5 for RS256 (RFC 7518 §3.3); none for Ed25519, which hashes itself (RFC 8037 §3.1). */
const DIGEST: Record<SigningAlgorithm, string | null> = { RS256: 'sha256', EdDSA: null };

/**
 * The workload identity a Nomad JWT proves, or null when it does not prove one to us: a
 * compact JWS (RFC 7515) whose header names an algorithm Nomad signs with and a key id
 * (Nomad sets `kid` to the root key's id, nomad/encrypter.go `SignClaims`) that `keys`
 * knows for that same algorithm, whose signature verifies, that has not expired (an
 * identity without `exp` never expires and is refused: ours have a TTL), is not used
 * before its `nbf`/`iat`, and is meant for `expected.audience`.
 *
 * `iss` is not read: Nomad sets it only when its servers are configured with `oidc_issuer`
 * (nomad/encrypter.go, `SignClaims`), and the keys come from that cluster's own JWKS, so a
 * signature that verifies already says which cluster issued the token.
 */
export async function verifyWorkloadIdentity(token: string, keys: KeyLookup, expected: IdentityExpectations): Promise<WorkloadIdentity | null> {
  if (token.length > MAX_TOKEN_LENGTH) return null;
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) return null;
  const [encodedHeader, encodedClaims, signature] = parts as [string, string, string];
  const header = decodeJson(encodedHeader);
  if (!header || (header.alg !== 'RS256' && header.alg !== 'EdDSA') || typeof header.kid !== 'string' || header.kid === '') return null;
  // RFC 7515 §4.1.11: extensions a recipient does not understand make the token invalid.
  if (header.crit !== undefined) return null;
  const key = await keys(header.kid);
  // The key's own algorithm decides, never only the header's (RFC 8725 §3.1).
  if (!key || key.alg !== header.alg) return null;
  if (!signatureHolds(key, `${encodedHeader}.${encodedClaims}`, signature)) return null;
  const claims = decodeJson(encodedClaims);
  if (!claims || !inTime(claims, expected.now) || !audienceIncludes(claims.aud, expected.audience)) return null;
  const identity = identityOf(claims);
  return identity && { ...identity, validUntil: new Date(((claims.exp as number) + LEEWAY_SECONDS) * 1000) };
}

function signatureHolds(key: VerificationKey, signed: string, signature: string): boolean {
  try {
    return verify(DIGEST[key.alg], Buffer.from(signed), key.key, Buffer.from(signature, 'base64url'));
  } catch {
    return false; // a signature node:crypto cannot even read (a wrong length for the key)
  }
}

function decodeJson(encoded: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** RFC 7519 §4.1.4–4.1.6, NumericDate seconds: `exp` required, `nbf` and `iat` when present. */
function inTime(claims: Record<string, unknown>, now: Date): boolean {
  const seconds = now.getTime() / 1000;
  const { exp, nbf, iat } = claims;
  if (typeof exp !== 'number' || seconds >= exp + LEEWAY_SECONDS) return false;
  for (const notBefore of [nbf, iat]) {
    if (notBefore === undefined) continue;
    if (typeof notBefore !== 'number' || seconds < notBefore - LEEWAY_SECONDS) return false;
  }
  return true;
}

/** RFC 7519 §4.1.3: one string or a list; Nomad writes the identity block's `aud` list. */
function audienceIncludes(aud: unknown, audience: string): boolean {
  return aud === audience || (Array.isArray(aud) && aud.includes(audience));
}

function identityOf(claims: Record<string, unknown>): Omit<WorkloadIdentity, 'validUntil'> | null {
  const { nomad_namespace: namespace, nomad_job_id: jobId, nomad_allocation_id: allocationId, nomad_task: task } = claims;
  const named = (value: unknown): value is string => typeof value === 'string' && value !== '';
  if (!named(namespace) || !named(jobId) || !named(allocationId)) return null;
  if (task !== undefined && !named(task)) return null;
  return { namespace, jobId, allocationId, task: task ?? null };
}
