import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { masterKeyId, SecretBox, UnknownMasterKeyError } from '../control/crypto/secret-box.js';
import { sealV1 } from './support/sealed-values.js';

/** `sealed` with its i-th dot-separated part replaced. */
const withPart = (sealed: string, index: number, part: string) => sealed.split('.').map((p, i) => (i === index ? part : p)).join('.');

describe('SecretBox: the master-key ring (control/crypto/secret-box.ts)', () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);

  it('seals as v2.<key id>.… under the first key and opens it again', () => {
    const box = new SecretBox([newKey, oldKey]);
    const sealed = box.seal('sk-live-ünïcode');
    const [version, keyId, ...rest] = sealed.split('.');
    assert.equal(version, 'v2');
    assert.equal(keyId, masterKeyId(newKey));
    assert.equal(rest.length, 3);
    assert.equal(box.open(sealed), 'sk-live-ünïcode');
    assert.notEqual(box.seal('same'), box.seal('same'), 'a fresh nonce per value');
    assert.ok(box.isCurrent(sealed));
  });

  it('derives the key id from the key: 8 bytes of its SHA-256 in base64url, the same on every start', () => {
    assert.match(masterKeyId(newKey), /^[A-Za-z0-9_-]{11}$/);
    assert.equal(masterKeyId(Buffer.from(newKey)), masterKeyId(newKey));
    assert.notEqual(masterKeyId(oldKey), masterKeyId(newKey));
    // The value an operator gets from `base64 -d | openssl dgst -sha256 -binary | head -c 8 | base64url`.
    assert.equal(masterKeyId(Buffer.alloc(32, 0)), 'Zmh6rfhivXc');
  });

  it('opens what an older key sealed, whatever its place in the list, and seals only with the first', () => {
    const before = new SecretBox([oldKey]).seal('model key');
    const rotated = new SecretBox([newKey, oldKey]);
    assert.equal(rotated.open(before), 'model key');
    assert.equal(rotated.isCurrent(before), false);
    assert.equal(rotated.seal('x').split('.')[1], masterKeyId(newKey));
    assert.equal(new SecretBox([oldKey, newKey]).seal('x').split('.')[1], masterKeyId(oldKey));
    assert.deepEqual(rotated.keyIds, [masterKeyId(newKey), masterKeyId(oldKey)]);
  });

  it('reads v1 values (no key id) by trying every key, the current one first', () => {
    const legacy = sealV1(oldKey, 'secret from before rotation');
    assert.equal(new SecretBox([oldKey]).open(legacy), 'secret from before rotation');
    assert.equal(new SecretBox([newKey, oldKey]).open(legacy), 'secret from before rotation');
    assert.equal(new SecretBox([randomBytes(32), newKey, oldKey]).open(legacy), 'secret from before rotation');
    assert.equal(new SecretBox([newKey, oldKey]).isCurrent(legacy), false);
    assert.throws(() => new SecretBox([newKey]).open(legacy), /v1, from before key ids\) opens with none of the 1 configured master key/);
  });

  it('names the key id, never a key, when no configured key has it', () => {
    const sealed = new SecretBox([oldKey]).seal('needs the old key');
    assert.throws(
      () => new SecretBox([newKey]).open(sealed),
      (error: unknown) => {
        assert.ok(error instanceof UnknownMasterKeyError);
        assert.equal(error.keyId, masterKeyId(oldKey));
        assert.match(error.message, new RegExp(`master key ${masterKeyId(oldKey)}, which MASTER_KEYS does not hold`));
        for (const key of [oldKey, newKey]) {
          assert.ok(!error.message.includes(key.toString('base64')) && !error.message.includes(key.toString('base64url')), 'a key in the message');
        }
        return true;
      },
    );
  });

  it('binds the key id: a value relabelled to another configured key, or cut down to v1, does not open', () => {
    const box = new SecretBox([newKey, oldKey]);
    const underOld = new SecretBox([oldKey]).seal('bound');
    // Relabelled to the current key: opened with the wrong key and the wrong header, the tag fails.
    assert.throws(() => box.open(withPart(underOld, 1, masterKeyId(newKey))), /unable to authenticate/i);
    // Relabelled as v1 with the right key in the ring: the header was authenticated, so v1 (no header) fails too.
    const [, , nonce, tag, ciphertext] = underOld.split('.');
    assert.throws(() => box.open(['v1', nonce, tag, ciphertext].join('.')), /opens with none/);
  });

  it('refuses a changed ciphertext, a changed or shortened tag, and unknown formats', () => {
    const box = new SecretBox([newKey]);
    const sealed = box.seal('integrity');
    const [, , , tag, ciphertext] = sealed.split('.') as string[];
    const flipped = Buffer.from(ciphertext!, 'base64url');
    flipped[0]! ^= 1;
    assert.throws(() => box.open(withPart(sealed, 4, flipped.toString('base64url'))), /unable to authenticate/i);
    // GCM would check a 4-byte tag if allowed: the tag length is fixed at 16 bytes.
    assert.throws(() => box.open(withPart(sealed, 3, Buffer.from(tag!, 'base64url').subarray(0, 4).toString('base64url'))), /tag length/i);
    for (const bad of ['', 'v3.a.b.c.d', 'v2.only.three', sealed.split('.').slice(0, 4).join('.')]) {
      assert.throws(() => box.open(bad), /unknown format/, bad);
    }
  });

  it('takes one or more distinct 32-byte keys', () => {
    assert.throws(() => new SecretBox([]), /at least one key/);
    assert.throws(() => new SecretBox([randomBytes(16)]), /32-byte/);
    assert.throws(() => new SecretBox([newKey, Buffer.from(newKey)]), /same key twice/);
  });
});
