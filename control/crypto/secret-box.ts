import { createCipheriv, createDecipheriv, createHash, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/**
 * The id of a master key: the first 8 bytes of its SHA-256, base64url (11 characters).
 * Derived, so an operator never names ids by hand and the same key has the same id on
 * every copy of the control API; 64 bits of a hash say nothing useful about a 256-bit
 * random key. An operator can compute it with
 * `base64 -d <<<"$KEY" | openssl dgst -sha256 -binary | head -c 8 | base64 | tr '+/' '-_' | tr -d =`.
 */
export function masterKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest().subarray(0, 8).toString('base64url');
}

/** A sealed value names a key none of the configured ones has: the message names the id, never a key. */
export class UnknownMasterKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`sealed value is under master key ${keyId}, which MASTER_KEYS does not hold; add that key back (after the current one) to read it`);
    this.name = 'UnknownMasterKeyError';
  }
}

const TAG_BYTES = 16;

interface MasterKey {
  id: string;
  /** A KeyObject made once: given a Buffer, every cipher would import the key again (about 12 µs a value). */
  key: KeyObject;
}

/**
 * AES-256-GCM with a random 96-bit nonce per value, under a keyring: the first key seals,
 * every key opens what it sealed (docs/decisions.md, "Master keys").
 *
 * - `v2.<key id>.<nonce>.<tag>.<ciphertext>` (base64url parts) is what `seal` writes. The
 *   header `v2.<key id>` is the cipher's additional authenticated data, so a value whose id
 *   was changed (or that was cut down to look like v1) fails to open instead of being read
 *   with another key.
 * - `v1.<nonce>.<tag>.<ciphertext>` was written before keys had ids, by the one MASTER_KEY
 *   of the time. Nothing records which key that was, and after a rotation it may stand
 *   anywhere in the list, so `open` tries every key, the current one first: a wrong key
 *   fails GCM's tag check (a false pass has odds of 2^-128 per try).
 */
export class SecretBox {
  private readonly keys: readonly MasterKey[];

  /** `keys`: the current key first, then older ones; each 32 bytes, no two alike. */
  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('SecretBox needs at least one key');
    this.keys = keys.map((key) => {
      if (key.length !== 32) throw new Error('SecretBox needs 32-byte keys');
      return { id: masterKeyId(key), key: createSecretKey(key) };
    });
    if (new Set(this.keys.map((key) => key.id)).size !== this.keys.length) throw new Error('SecretBox was given the same key twice');
  }

  /** The id `seal` writes; older ids, in the order configured, follow in `keyIds`. */
  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  get keyIds(): string[] {
    return this.keys.map((key) => key.id);
  }

  seal(plaintext: string): string {
    const { id, key } = this.keys[0]!;
    const header = `v2.${id}`;
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES }).setAAD(Buffer.from(header));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [header, ...[nonce, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join('.');
  }

  open(sealed: string): string {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const [, id, nonce, tag, ciphertext] = parts as [string, string, string, string, string];
      const key = this.keys.find((candidate) => candidate.id === id);
      if (!key) throw new UnknownMasterKeyError(id);
      return decrypt(key.key, `v2.${id}`, nonce, tag, ciphertext);
    }
    if (parts[0] === 'v1' && parts.length === 4) {
      const [, nonce, tag, ciphertext] = parts as [string, string, string, string];
      for (const { key } of this.keys) {
        try {
          return decrypt(key, null, nonce, tag, ciphertext);
        } catch {
          // not this key: GCM's tag did not match; try the next one
        }
      }
      throw new Error(`sealed value (v1, from before key ids) opens with none of the ${this.keys.length} configured master key(s)`);
    }
    throw new Error('Sealed value has an unknown format');
  }

  /** Whether `sealed` is under the current key already, i.e. a rotation leaves it alone. */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(this.currentPrefix);
  }

  /** What every value sealed with the current key starts with (the rotation's SQL selects on it). */
  get currentPrefix(): string {
    return `v2.${this.currentKeyId}.`;
  }
}

function decrypt(key: KeyObject, header: string | null, nonce: string, tag: string, ciphertext: string): string {
  // A fixed tag length: otherwise GCM accepts a tag cut to 4 bytes, which is far easier to forge.
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'), { authTagLength: TAG_BYTES });
  if (header !== null) decipher.setAAD(Buffer.from(header));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
