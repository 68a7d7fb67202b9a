import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { AgentTokens } from '../control/crypto/agent-token.js';
import { KeySetCache, parseKeySet } from '../control/crypto/json-web-key-set.js';
import { verifyWorkloadIdentity, type KeyLookup } from '../control/crypto/nomad-workload-identity.js';
import { ReplicaCredentials } from '../control/services/replica-credentials.js';
import { nomadAllocationLiveness } from '../control/orchestrator/nomad/allocation-liveness.js';
import { FakeKeyring, signJws, workloadIdentityClaims } from './support/fake-nomad/identities.js';
import { ManualClock } from './support/manual-clock.js';

/**
 * The check of a Nomad workload identity (control/crypto/nomad-workload-identity.ts) and the
 * key set it reads (control/crypto/json-web-key-set.ts), without a cluster: tokens signed
 * by the fake Nomad's keyring (test/support/fake-nomad/identities.ts, Nomad's signer and
 * claims builder ported), each changed in one way Nomad would never sign.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;
const NOW = new Date('2026-03-01T12:00:00Z');
const AUDIENCE = 'agent-services';

const claimsAt = (now: Date, identity: Json = {}) =>
  workloadIdentityClaims({
    job: { ID: 'agent-agt_7Qm2XbR9kLp4TzW1nVc8', Namespace: 'agents' },
    region: 'global',
    alloc: { ID: '5f0d1f0e-8f43-4a8b-9d36-0c2a3b1e7d11', Namespace: 'agents', TaskGroup: 'agent' },
    task: { Name: 'agent' },
    identity: { Name: 'agent-services', Audience: [AUDIENCE], TTL: 3600 * SECOND, ...identity },
    now,
  });

/** The keyring's keys, fetched at once: what the control API's cache holds. */
const lookupOf = (keyring: FakeKeyring): KeyLookup => {
  const keys = parseKeySet(keyring.jwks());
  return async (kid) => keys.get(kid) ?? null;
};

const encode = (value: Json) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('Nomad workload identities: the check', function () {
  this.timeout(20_000);
  const keyring = new FakeKeyring('RS256');
  const keys = lookupOf(keyring);
  const check = (token: string, now = NOW, audience = AUDIENCE) => verifyWorkloadIdentity(token, keys, { audience, now });

  it('accepts what Nomad signs with RS256: the namespace, job, allocation and task it names', async () => {
    const claims = claimsAt(NOW);
    assert.equal(claims.aud, AUDIENCE, 'go-jose writes one audience as a plain string');
    assert.equal(claims.sub, 'global:agents:agent-agt_7Qm2XbR9kLp4TzW1nVc8:agent:agent:agent-services');
    assert.deepEqual(await check(keyring.sign(claims)), {
      namespace: 'agents', jobId: 'agent-agt_7Qm2XbR9kLp4TzW1nVc8', allocationId: '5f0d1f0e-8f43-4a8b-9d36-0c2a3b1e7d11', task: 'agent',
      // Its expiry, and the minute of leeway go-jose's DefaultLeeway allows past it.
      validUntil: new Date((claims.exp + 60) * 1000),
    });
    // Several audiences are a list; one of them must be ours.
    assert.ok(await check(keyring.sign(claimsAt(NOW, { Audience: ['vault.io', AUDIENCE] }))));
  });

  it('accepts what a keyring from before Nomad 1.7 signs, with EdDSA (Ed25519)', async () => {
    const ed25519 = new FakeKeyring('EdDSA');
    assert.equal(ed25519.jwks().keys[0]!.crv, 'Ed25519');
    assert.ok(await verifyWorkloadIdentity(ed25519.sign(claimsAt(NOW)), lookupOf(ed25519), { audience: AUDIENCE, now: NOW }));
  });

  it('holds exp, nbf and iat to the time with a minute of leeway, and refuses an identity without exp', async () => {
    const token = keyring.sign(claimsAt(NOW));
    const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);
    assert.ok(await check(token, at(3600 + 59)), 'a minute past exp, less a second');
    assert.equal(await check(token, at(3600 + 60)), null, 'a minute past exp');
    assert.ok(await check(token, at(-60)), 'a minute before nbf and iat');
    assert.equal(await check(token, at(-61)), null, 'more than a minute before nbf and iat');
    assert.equal(await check(keyring.sign(claimsAt(NOW, { TTL: 0 }))), null, 'no TTL, no exp: never expires, refused');
  });

  it('refuses another audience: Nomad\'s default identity, Vault\'s, or none', async () => {
    for (const Audience of [['nomadproject.io'], ['vault.io'], []]) assert.equal(await check(keyring.sign(claimsAt(NOW, { Audience }))), null, String(Audience));
    assert.equal(await check(keyring.sign(claimsAt(NOW)), NOW, 'consul.io'), null);
  });

  it('refuses a signature of another key, one changed by a bit, claims changed under it, and a kid the set lacks', async () => {
    const token = keyring.sign(claimsAt(NOW));
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const other = new FakeKeyring('RS256');
    const forged = signJws({ alg: 'RS256', kid: keyring.activeKeyId, typ: 'JWT' }, claimsAt(NOW), generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
    const flipped = Buffer.from(signature, 'base64url');
    flipped[10] = flipped[10]! ^ 1;
    const otherAgent = encode({ ...claimsAt(NOW), nomad_job_id: 'agent-agt_someoneElse0000000' });
    for (const [what, bad] of [
      ['another key under our kid', forged],
      ['another keyring, its own kid', other.sign(claimsAt(NOW))],
      ['a bit flipped', `${header}.${payload}.${flipped.toString('base64url')}`],
      ['claims of another job', `${header}.${otherAgent}.${signature}`],
      ['the signature cut short', `${header}.${payload}.${signature.slice(0, -4)}`],
      ['no signature', `${header}.${payload}.`],
      ['base64 padding and spaces', `${header}.${payload}.${signature}==`],
    ] as const) assert.equal(await check(bad), null, what);
  });

  it('refuses alg none, an HMAC keyed with the public key, an algorithm the key is not for, a header without kid, and crit', async () => {
    const claims = encode(claimsAt(NOW));
    const kid = keyring.activeKeyId;
    const hmacKey = keyring.jwks().keys[0]!.n as string;
    const header = (fields: Json) => encode(fields);
    const hs256Input = `${header({ alg: 'HS256', kid, typ: 'JWT' })}.${claims}`;
    const cases: [string, string][] = [
      ['alg none, no signature', `${header({ alg: 'none', kid, typ: 'JWT' })}.${claims}.`],
      ['alg none, any signature', `${header({ alg: 'none', kid, typ: 'JWT' })}.${claims}.AAAA`],
      ['HS256 over the public key', `${hs256Input}.${createHmac('sha256', hmacKey).update(hs256Input).digest('base64url')}`],
    ];
    // An RS256 key asked to verify EdDSA: the key's own algorithm decides.
    const ed25519 = generateKeyPairSync('ed25519').privateKey;
    cases.push(['EdDSA under an RS256 kid', signJws({ alg: 'EdDSA', kid, typ: 'JWT' }, claimsAt(NOW), ed25519)]);
    // Signed by the real key, so only the header can be why these are refused.
    cases.push(['no kid', keyring.sign(claimsAt(NOW), { kid: undefined })]);
    cases.push(['an empty kid', keyring.sign(claimsAt(NOW), { kid: '' })]);
    cases.push(['crit', keyring.sign(claimsAt(NOW), { crit: ['exp'] })]);
    for (const [what, token] of cases) assert.equal(await check(token), null, what);
  });

  it('refuses claims that name no namespace, job or allocation, and text that is not a JWT', async () => {
    for (const missing of ['nomad_namespace', 'nomad_job_id', 'nomad_allocation_id']) {
      const claims = claimsAt(NOW);
      delete claims[missing];
      assert.equal(await check(keyring.sign(claims)), null, missing);
    }
    for (const text of ['', 'a.b', 'ast1.x.y', 'not a token at all', `${'a'.repeat(20_000)}.b.c`]) assert.equal(await check(text), null, text.slice(0, 20));
  });
});

describe('Nomad workload identities: the key set', function () {
  this.timeout(20_000);

  it('reads RS256 and Ed25519 keys as go-jose writes them, and leaves out any other kind, a weak RSA key and a key for encryption', () => {
    const rsa = new FakeKeyring('RS256').jwks().keys[0]!;
    const ed = new FakeKeyring('EdDSA').jwks().keys[0]!;
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
    const keys = parseKeySet({
      keys: [
        rsa, ed,
        { ...rsa, kid: 'enc', use: 'enc' },
        { ...rsa, kid: 'mismatch', alg: 'EdDSA' },
        { kty: 'oct', kid: 'secret', alg: 'HS256', k: 'c2VjcmV0' },
        { use: 'sig', kty: 'RSA', kid: 'weak', alg: 'RS256', n: weak.n, e: weak.e },
        { ...rsa, kid: '' },
        null,
      ],
    });
    assert.deepEqual([...keys.keys()], [rsa.kid, ed.kid]);
    assert.equal(parseKeySet({ nothing: true }).size, 0);
    assert.equal(parseKeySet(null).size, 0);
  });

  it('fetches once for known keys, again for an unknown kid at most every 10 s, again once 15 minutes old, and keeps its keys when a fetch fails', async () => {
    const keyring = new FakeKeyring('RS256');
    const clock = new ManualClock(NOW);
    let fetches = 0;
    let failing = false;
    const failures: unknown[] = [];
    const cache = new KeySetCache(
      async () => {
        fetches += 1;
        if (failing) throw new Error('connection refused');
        return keyring.jwks();
      },
      clock,
      { minRefetchMs: 10_000, maxAgeMs: 15 * 60_000 },
      (error) => failures.push(error),
    );
    const first = keyring.activeKeyId;
    // Concurrent lookups share one fetch.
    const found = await Promise.all([cache.keyFor(first), cache.keyFor(first), cache.keyFor(first)]);
    assert.ok(found.every(Boolean));
    assert.equal(fetches, 1);
    assert.ok(await cache.keyFor(first));
    assert.equal(fetches, 1, 'a known kid costs no fetch');

    const second = keyring.rotate();
    clock.advance(9_999);
    assert.equal(await cache.keyFor(second), null, 'within 10 s of the last fetch, an unknown kid is not fetched');
    assert.equal(await cache.keyFor('made-up'), null);
    assert.equal(fetches, 1);
    clock.advance(1);
    assert.ok(await cache.keyFor(second), 'the rotation is picked up 10 s after the last fetch');
    assert.ok(await cache.keyFor(first), 'the older key is still published');
    assert.equal(fetches, 2);

    keyring.remove(first);
    clock.advance(15 * 60_000 - 1);
    assert.ok(await cache.keyFor(first), 'a removed key verifies until the set is 15 minutes old');
    clock.advance(1);
    assert.equal(await cache.keyFor(first), null, 'then the set is fetched again, without it');
    assert.equal(fetches, 3);

    failing = true;
    clock.advance(15 * 60_000);
    assert.ok(await cache.keyFor(second), 'a failed fetch keeps the keys held');
    assert.equal(fetches, 4);
    assert.equal(failures.length, 1);
    assert.equal(await cache.keyFor('unknown'), null);
    assert.equal(fetches, 4, 'a failure counts as an attempt: no fetch for 10 s');
  });
});

describe('the agent services: replica credentials verified once and kept', () => {
  const keyring = new FakeKeyring('RS256');

  it('keeps a verified identity at most a minute, so a signing key Nomad removed stops working within one', async () => {
    const clock = new ManualClock(NOW);
    let keys = lookupOf(keyring);
    const credentials = new ReplicaCredentials(new AgentTokens([randomBytes(32)], 3600), clock, { keys: (kid) => keys(kid), namespace: 'agents', allocationLive: async () => true });
    const token = keyring.sign(claimsAt(NOW));
    const expected = { agentId: 'agt_7Qm2XbR9kLp4TzW1nVc8', replicaId: '5f0d1f0e-8f43-4a8b-9d36-0c2a3b1e7d11' };
    assert.deepEqual(await credentials.verify(token), expected);

    keys = async () => null; // the key is gone from Nomad's key set
    clock.advance(59_999);
    assert.deepEqual(await credentials.verify(token), expected, 'kept for a minute');
    clock.advance(1);
    assert.equal(await credentials.verify(token), null, 'verified again after a minute, without the key');
    assert.equal(await credentials.verify('garbage'), null);
  });

  it("asks Nomad whether the identity's allocation still runs, and keeps a stopped one's JWT a minute at most", async () => {
    const clock = new ManualClock(NOW);
    const asked: string[] = [];
    let running = true;
    const credentials = new ReplicaCredentials(new AgentTokens([randomBytes(32)], 3600), clock, {
      keys: lookupOf(keyring),
      namespace: 'agents',
      allocationLive: async (identity) => {
        asked.push(identity.allocationId);
        return running;
      },
    });
    const token = keyring.sign(claimsAt(NOW));
    assert.ok(await credentials.verify(token));
    assert.deepEqual(asked, ['5f0d1f0e-8f43-4a8b-9d36-0c2a3b1e7d11'], 'asked of the allocation the JWT names');

    running = false; // Nomad stopped it
    clock.advance(59_999);
    assert.ok(await credentials.verify(token), 'kept for a minute');
    assert.equal(asked.length, 1, 'without asking again');
    clock.advance(1);
    assert.equal(await credentials.verify(token), null, "refused once verified again: the allocation's claims are treated as expired");

    // Forged or foreign identities are refused before Nomad is asked anything.
    assert.equal(await credentials.verify(keyring.sign(claimsAt(NOW, { Audience: ['vault.io'] }))), null);
    assert.equal(asked.length, 2);
  });

  it('refuses every identity while Nomad cannot say whether its allocation runs, and says so once per outage', async () => {
    // A port nothing listens on: every attempt is refused at once.
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (warnings.push(JSON.parse(String(chunk)).msg), done()) }));
    const live = nomadAllocationLiveness({ nomad: { address: `http://127.0.0.1:${port}`, token: 'nomad-token', ca: null, cert: null, key: null, skipVerify: false } }, logger);
    const identity = { namespace: 'agents', jobId: 'agent-agt_7Qm2XbR9kLp4TzW1nVc8', allocationId: '5f0d1f0e-8f43-4a8b-9d36-0c2a3b1e7d11', task: 'agent', validUntil: NOW };
    assert.equal(await live(identity), false);
    assert.equal(await live(identity), false);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0]!, /could not read an allocation from Nomad/);
  });

  it('keeps a token no longer than it is valid', async () => {
    const clock = new ManualClock(NOW);
    const tokens = new AgentTokens([randomBytes(32)], 30);
    const credentials = new ReplicaCredentials(tokens, clock, null);
    const minted = tokens.mint('agt_short', 'replica-1', NOW);
    assert.deepEqual(await credentials.verify(minted.token), { agentId: 'agt_short', replicaId: 'replica-1' });
    clock.advance(29_999);
    assert.ok(await credentials.verify(minted.token));
    clock.advance(1);
    assert.equal(await credentials.verify(minted.token), null, 'accepted past its expiry');
  });
});
