import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectError, expectStatus } from './support/control-api.js';

/**
 * Issue 31 item 6: where a webhook's URL may point, checked when it is saved (422
 * VALIDATION_ERROR at ["body", "url"]) as it is at each delivery (webhook-address-policy.test.ts),
 * and a URL the WHATWG parser would have to rewrite is refused rather than rewritten.
 */

/** Link-local and metadata addresses, in the spellings a URL parser accepts for them: refused whatever the setting. */
const NEVER = [
  'http://169.254.169.254/latest/meta-data/',
  'http://2852039166/',
  'http://0xa9fea9fe/',
  'http://0251.0376.0251.0376/',
  'http://169.254.43518/',
  'http://169.254.0.1/',
  'http://100.100.100.200/latest/meta-data/',
  'http://[fd00:ec2::254]/latest/meta-data/',
  'http://[fd20:ce::254]/',
  'http://[fe80::1]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[::ffff:a9fe:a9fe]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[2002:a9fe:a9fe::]/',
  'http://metadata.google.internal/computeMetadata/v1/',
];

/** Special-purpose addresses and names: refused while WEBHOOK_ALLOW_PRIVATE_NETWORKS is off, accepted when it is on. */
const SPECIAL = [
  'http://127.0.0.1:8080/hook',
  'http://10.1.2.3/hook',
  'http://172.16.0.1/hook',
  'http://192.168.1.1/hook',
  'http://0.0.0.0/hook',
  'http://100.64.0.1/hook',
  'http://192.0.0.1/hook',
  'http://192.0.2.1/hook',
  'http://198.18.0.1/hook',
  'http://198.51.100.1/hook',
  'http://203.0.113.1/hook',
  'http://224.0.0.1/hook',
  'http://240.0.0.1/hook',
  'http://255.255.255.255/hook',
  'http://[::]/hook',
  'http://[::1]/hook',
  'http://[::ffff:7f00:1]/hook',
  'http://[64:ff9b::a00:1]/hook',
  'http://[100::1]/hook',
  'http://[2001::1]/hook',
  'http://[2001:db8::1]/hook',
  'http://[fc00::1]/hook',
  'http://[fd12:3456::1]/hook',
  'http://[ff02::1]/hook',
  'http://localhost:8080/hook',
  'http://hooks.localhost/hook',
  'http://receiver.internal/hook',
  'http://printer.local/hook',
];

/** Texts a WHATWG URL parser accepts only by rewriting them: refused whatever the setting, never stored rewritten. */
const REWRITTEN = [
  'http:///hooks.example.com/in',
  'https:hooks.example.com/in',
  'https://hooks.example.com/a\r\nb',
  'https://hooks.example.com/a\nb',
  'https://hooks.example.com/a\tb',
  'https://hooks.exa\tmple.com/in',
  'https:\\\\hooks.example.com\\in',
  'https://hooks.example.com\\in',
  ' https://hooks.example.com/in',
  'https://hooks.example.com/in ',
  'HTTPS://hooks.example.com/in',
  'https://Hooks.Example.com/in',
  'https://hooks.example.com:443/in',
  'https://hooks.example.com/a/../in',
  'https://hooks.example.com/a b',
  'http://[0:0:0:0:0:ffff:808:808]/in',
  'https://bücher.example/in',
];

/** Accepted under either setting, stored as given (a bare origin gets its slash). */
const ACCEPTED: [string, string][] = [
  ['https://hooks.example.com/platform', 'https://hooks.example.com/platform'],
  ['https://hooks.example.com', 'https://hooks.example.com/'],
  ['https://hooks.example.com:8443/in?team=a&x=%20#part', 'https://hooks.example.com:8443/in?team=a&x=%20#part'],
  ['http://8.8.8.8/hook', 'http://8.8.8.8/hook'],
  ['http://[2606:4700:4700::1111]/hook', 'http://[2606:4700:4700::1111]/hook'],
  ['https://xn--bcher-kva.example/in', 'https://xn--bcher-kva.example/in'],
];

function describePolicy(setting: 'false' | 'true', refused: string[], accepted: string[]): void {
  describe(`webhooks: URLs saved with WEBHOOK_ALLOW_PRIVATE_NETWORKS=${setting}`, () => {
    let control: TestControl;
    let token = '';
    before(async () => {
      control = await startControl({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: setting });
      ({ token } = await control.signUp());
    });
    after(async () => control?.close());

    const create = (url: string) => control.request('POST', '/account/webhooks', { token, body: { url, events: ['agent.deployed'] } });

    it('refuses link-local and metadata addresses in every spelling, and says which', async () => {
      for (const url of NEVER) {
        const answer = await create(url);
        expectError(answer, 422, 'VALIDATION_ERROR', ['body', 'url']);
        assert.match(answer.body.details.errors[0].msg, /(cloud metadata service|link-local).*which webhooks never reach$/, url);
        assert.equal(answer.body.details.errors[0].type, 'value_error.url');
      }
    });

    it('refuses a URL a parser would rewrite, naming the form it would take', async () => {
      for (const url of REWRITTEN) {
        const answer = await create(url);
        expectError(answer, 422, 'VALIDATION_ERROR', ['body', 'url']);
        assert.match(answer.body.details.errors[0].msg, /^must be written as a URL parser reads it, which is "/, JSON.stringify(url));
      }
      assert.equal((await create('http:///hooks.example.com/in')).body.details.errors[0].msg.includes('"http://hooks.example.com/in"'), true);
    });

    for (const url of refused) {
      it(`refuses ${url} (422 at body.url)`, async () => {
        const answer = await create(url);
        expectError(answer, 422, 'VALIDATION_ERROR', ['body', 'url']);
        assert.match(answer.body.details.errors[0].msg, /\(WEBHOOK_ALLOW_PRIVATE_NETWORKS is off\)$/);
      });
    }

    it(`accepts ${ACCEPTED.length + accepted.length} URLs and stores each as given`, async () => {
      for (const [url, stored] of [...ACCEPTED, ...accepted.map((url): [string, string] => [url, url])]) {
        const answer = await create(url);
        expectStatus(answer, 201);
        assert.equal(answer.body.url, stored);
      }
    });
  });
}

describePolicy('false', SPECIAL, []);
describePolicy('true', [], SPECIAL);
