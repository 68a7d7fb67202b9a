import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { createTxtVerifier } from '../control/domains/txt-verifier.js';
import { startChallTestSrv, type ChallTestSrv } from './support/challtestsrv.js';

/** The TXT check of custom domains against a real DNS server (pebble-challtestsrv). */
describe('custom domains: the TXT verifier', () => {
  let dns: ChallTestSrv;

  before(async () => {
    dns = await startChallTestSrv();
  });
  after(async () => dns?.stop());

  it('passes when the record at _agent-platform.<hostname> holds the value, among others', async () => {
    await dns.setTxt('_agent-platform.ok.example.test', 'other-value');
    await dns.setTxt('_agent-platform.ok.example.test', 'expected-value');
    const verifier = createTxtVerifier({ resolver: dns.dns });
    assert.deepEqual(await verifier.verify('ok.example.test', 'expected-value'), { ok: true });
  });

  it('says there is no record when none is set, and again after it is cleared', async () => {
    const verifier = createTxtVerifier({ resolver: dns.dns });
    assert.deepEqual(await verifier.verify('none.example.test', 'v'), { ok: false, reason: 'no TXT record at _agent-platform.none.example.test' });
    await dns.setTxt('_agent-platform.gone.example.test', 'v');
    assert.deepEqual(await verifier.verify('gone.example.test', 'v'), { ok: true });
    await dns.clearTxt('_agent-platform.gone.example.test');
    assert.deepEqual(await verifier.verify('gone.example.test', 'v'), { ok: false, reason: 'no TXT record at _agent-platform.gone.example.test' });
  });

  it('names the record and what it holds when the value is wrong', async () => {
    await dns.setTxt('_agent-platform.wrong.example.test', 'typo-value');
    const verdict = await createTxtVerifier({ resolver: dns.dns }).verify('wrong.example.test', 'expected-value');
    assert.deepEqual(verdict, { ok: false, reason: 'TXT record at _agent-platform.wrong.example.test does not contain the expected value (found "typo-value")' });
  });

  it("gives the resolver's code when the server does not answer, within the deadline", async () => {
    // A UDP socket that reads queries and never answers: a silent server.
    const silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const verdict = await createTxtVerifier({ resolver: `127.0.0.1:${silent.address().port}`, timeoutMs: 200, tries: 1 }).verify('slow.example.test', 'v');
      assert.deepEqual(verdict, { ok: false, reason: 'the DNS lookup of _agent-platform.slow.example.test failed: ETIMEOUT' });
      assert.ok(Date.now() - started < 5000, 'answered within the deadline');
    } finally {
      silent.close();
    }
  });
});
