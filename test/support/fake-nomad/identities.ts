import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';

/**
 * The fake server's keyring and the workload identities it signs, as Nomad's are:
 *
 * - a root key per rotation, its id a UUID, signing with RSA-2048 and RS256 (Nomad makes an
 *   RSA key with every root key and prefers it to the Ed25519 one: nomad/structs/keyring.go,
 *   `NewUnwrappedRootKey`; nomad/encrypter.go, `Encrypter.SignClaims`), or with Ed25519 and
 *   EdDSA for a keyring made before Nomad 1.7 (the `algorithm` option);
 * - `jwks()` the body of `GET /.well-known/jwks.json`: every key not removed, as go-jose's
 *   JSONWebKey marshals it (command/agent/keyring_endpoint.go, `JWKSRequest`; go-jose
 *   jwk.go, `rawJSONWebKey`, whose field order this keeps);
 * - `sign` a compact JWS with the header go-jose writes for Nomad's signer:
 *   `{alg, kid, typ: "JWT"}` (`SignClaims`: `WithHeader("kid", …).WithType("JWT")`).
 */
export type KeyringAlgorithm = 'RS256' | 'EdDSA';

interface RootKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

type Json = Record<string, any>;

export class FakeKeyring {
  private readonly keys: RootKey[] = [];

  constructor(readonly algorithm: KeyringAlgorithm = 'RS256') {
    this.rotate();
  }

  /** `nomad operator root keyring rotate`: a new key signs from now on; the older ones stay published, so what they signed still verifies. */
  rotate(): string {
    const pair = this.algorithm === 'RS256' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
    const key = { kid: randomUUID(), privateKey: pair.privateKey, publicKey: pair.publicKey };
    this.keys.push(key);
    return key.kid;
  }

  /** `nomad operator root keyring remove`: the key is no longer published. */
  remove(kid: string): void {
    const index = this.keys.findIndex((key) => key.kid === kid);
    if (index >= 0) this.keys.splice(index, 1);
  }

  get activeKeyId(): string {
    return this.keys.at(-1)!.kid;
  }

  jwks(): { keys: Json[] } {
    return {
      keys: this.keys.map(({ kid, publicKey }) => {
        const jwk = publicKey.export({ format: 'jwk' });
        return this.algorithm === 'RS256'
          ? { use: 'sig', kty: 'RSA', kid, alg: 'RS256', n: jwk.n, e: jwk.e }
          : { use: 'sig', kty: 'OKP', kid, crv: 'Ed25519', alg: 'EdDSA', x: jwk.x };
      }),
    };
  }

  /** `claims` signed by the active key; `header` changes Nomad's header, for a test of what Nomad never signs. */
  sign(claims: Json, header: Json = {}): string {
    const key = this.keys.at(-1)!;
    return signJws({ alg: this.algorithm, kid: key.kid, typ: 'JWT', ...header }, claims, key.privateKey);
  }
}

/** A compact JWS of `header` and `claims` (RFC 7515 §7.1), signed with `key` as `header.alg` says (RS256 or EdDSA). */
export function signJws(header: Json, claims: Json, key: KeyObject): string {
  const encode = (value: Json) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${encode(header)}.${encode(claims)}`;
  const signature = sign(header.alg === 'RS256' ? 'sha256' : null, Buffer.from(input), key);
  return `${input}.${signature.toString('base64url')}`;
}

export interface IdentityContext {
  /** The job as registered (the allocation's version of it). */
  job: Json;
  /** The region the job runs in: its own, or the server's ("global") when it names none. */
  region: string;
  /** The allocation: its ID, Namespace and TaskGroup. */
  alloc: Json;
  /** The task: its Name. */
  task: Json;
  /** The task's identity block (api WorkloadIdentity: Name, Audience, TTL in nanoseconds). */
  identity: Json;
  /** The server's `oidc_issuer`, when configured. */
  issuer?: string;
  now: Date;
}

/**
 * The claims of a task's named identity, as nomad/structs/workload_id.go,
 * `WorkloadIdentityClaimsBuilder.Build`, makes them (no extra claims, Consul or Vault
 * blocks: agents have none): the allocation's namespace, the job's id (its parent's, if
 * any: `Job.GetIDforWorkloadIdentity`), the allocation and task, `sub` as
 * `<region>:<namespace>:<job>:<group>:<task>:<identity>` (nomad/structs/identity.go,
 * `setWorkloadSubject`), `aud` the block's audiences (go-jose writes one as a plain
 * string: jwt/claims.go, `Audience.MarshalJSON`), `nbf` = `iat` = now, `exp` only with a
 * TTL (`setExpiry`), a random `jti`, and `iss` only when the server has an issuer
 * (nomad/encrypter.go, `SignClaims`). Keys in go-jose's order: the workload claims, then
 * `iss sub aud exp nbf iat jti` (jwt/claims.go, `Claims`).
 */
export function workloadIdentityClaims(context: IdentityContext): Json {
  const { job, alloc, task, identity } = context;
  const now = Math.floor(context.now.getTime() / 1000);
  const jobId = job.ParentID || job.ID;
  const audience: string[] = identity.Audience ?? [];
  const ttlSeconds = Math.floor((identity.TTL ?? 0) / 1e9);
  return {
    nomad_namespace: alloc.Namespace,
    nomad_job_id: jobId,
    nomad_allocation_id: alloc.ID,
    nomad_task: task.Name,
    ...(context.issuer ? { iss: context.issuer } : {}),
    sub: [context.region, job.Namespace || 'default', jobId, alloc.TaskGroup, task.Name, identity.Name].join(':'),
    ...(audience.length === 0 ? {} : { aud: audience.length === 1 ? audience[0] : audience }),
    ...(ttlSeconds > 0 ? { exp: now + ttlSeconds } : {}),
    nbf: now,
    iat: now,
    jti: randomUUID(),
  };
}
