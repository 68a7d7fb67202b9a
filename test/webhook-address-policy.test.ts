import assert from 'node:assert/strict';
import { refusedAddress } from '../control/domain/public-address.js';
import { nextRetryDelayMs } from '../control/domain/webhooks.js';
import { WebhookSender } from '../control/services/webhook-sender.js';

/** The SSRF check and the retry schedule, as pure functions: no connection is opened here. */
describe('webhooks: which addresses a delivery may reach', () => {
  const refused: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['127.255.0.9', /loopback/],
    ['10.1.2.3', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['169.254.169.254', /link-local \(cloud metadata\)/],
    ['169.254.0.1', /link-local/],
    ['100.64.0.1', /carrier-grade NAT/],
    ['0.0.0.0', /unspecified/],
    ['224.0.0.1', /multicast/],
    ['255.255.255.255', /reserved/],
    ['::1', /loopback/],
    ['::', /unspecified/],
    ['fc00::1', /unique local/],
    ['fd12:3456::1', /unique local/],
    ['fe80::1', /link-local/],
    ['fe80::1%eth0', /link-local/],
    ['ff02::1', /multicast/],
    ['::ffff:127.0.0.1', /loopback \(IPv4-mapped\)/],
    ['::ffff:7f00:1', /loopback \(IPv4-mapped\)/],
    ['::ffff:169.254.169.254', /link-local \(cloud metadata\) \(IPv4-mapped\)/],
    ['::ffff:a9fe:a9fe', /link-local \(cloud metadata\) \(IPv4-mapped\)/],
    ['::ffff:10.0.0.1', /private \(IPv4-mapped\)/],
    ['64:ff9b::7f00:1', /loopback \(NAT64\)/],
    ['::127.0.0.1', /loopback \(IPv4-compatible\)/],
    ['example.com', /not an IP address/],
  ];
  for (const [address, why] of refused) {
    it(`refuses ${address}`, () => assert.match(refusedAddress(address) ?? 'allowed', why));
  }

  for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '169.253.255.255', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
    it(`allows the public address ${address}`, () => assert.equal(refusedAddress(address), null));
  }

  it('refuses a host whose addresses include a private one before connecting (a resolver of the test stands for DNS)', async () => {
    let resolved = '';
    const sender = new WebhookSender({ timeoutMs: 1000, allowPrivateNetworks: false }, async (host) => {
      resolved = host;
      return [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.7', family: 4 }];
    });
    const result = await sender.send({ url: 'https://hooks.example.com/in', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', eventId: 'evt_1', body: '{}' }, new Date());
    assert.equal(resolved, 'hooks.example.com');
    assert.equal(result.statusCode, null);
    assert.match(result.error!, /^refused: hooks\.example\.com resolves to 10\.0\.0\.7, a private address/);
  });
});

describe('webhooks: the retry schedule', () => {
  const schedule = { baseMs: 1000, maxMs: 60_000, windowMs: 86_400_000 };

  it('draws each wait uniformly below a ceiling that doubles per attempt (full jitter)', () => {
    assert.equal(nextRetryDelayMs(schedule, 1, 0, () => 0.999), 999);
    assert.equal(nextRetryDelayMs(schedule, 3, 0, () => 0.5), 2000);
    assert.equal(nextRetryDelayMs(schedule, 3, 0, () => 0), 0);
  });

  it('never waits longer than the maximum', () => {
    assert.equal(nextRetryDelayMs(schedule, 30, 0, () => 0.5), 30_000);
    assert.equal(nextRetryDelayMs(schedule, 10_000, 0, () => 0.5), 30_000);
  });

  it('gives up once the next attempt would fall past 24 hours after the event', () => {
    assert.equal(nextRetryDelayMs(schedule, 20, 86_400_000 - 10_000, () => 0.5), null);
    assert.equal(nextRetryDelayMs(schedule, 20, 86_400_000 - 40_000, () => 0.5), 30_000);
  });
});
