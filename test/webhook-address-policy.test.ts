import assert from 'node:assert/strict';
import { classifyAddress, refusedAddress } from '../control/domain/public-address.js';
import { nextRetryDelayMs } from '../control/domain/webhooks.js';
import { WebhookSender } from '../control/services/webhook-sender.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/** The SSRF check and the retry schedule, as pure functions: no connection is opened here but to a local receiver. */
const OFF = { allowPrivateNetworks: false };
const ON = { allowPrivateNetworks: true };
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('webhooks: which addresses a delivery may reach', () => {
  // Refused whatever WEBHOOK_ALLOW_PRIVATE_NETWORKS says: link-local and the metadata services, in every form.
  const never: [string, RegExp][] = [
    ['169.254.169.254', /^a cloud metadata service address, which webhooks never reach$/],
    ['169.254.0.1', /^a link-local address/],
    ['169.254.42.42', /link-local/],
    ['100.100.100.200', /cloud metadata service \(Alibaba Cloud\)/],
    ['fd00:ec2::254', /cloud metadata service \(AWS\)/],
    ['fd00:ec2::23', /AWS EKS Pod Identity/],
    ['fd20:ce::254', /cloud metadata service \(Google Cloud\)/],
    ['fe80::1', /^a link-local address/],
    ['fe80::1%eth0', /link-local/],
    ['febf::1', /link-local/],
    ['::ffff:169.254.169.254', /cloud metadata service \(IPv4-mapped\)/],
    ['::ffff:a9fe:a9fe', /cloud metadata service \(IPv4-mapped\)/],
    ['::ffff:0:a9fe:a9fe', /cloud metadata service \(IPv4-translated\)/],
    ['::169.254.169.254', /cloud metadata service \(IPv4-compatible\)/],
    ['64:ff9b::a9fe:a9fe', /cloud metadata service \(NAT64\)/],
    ['64:ff9b:1::a9fe:a9fe', /cloud metadata service \(local-use NAT64\)/],
    ['2002:a9fe:a9fe::1', /cloud metadata service \(6to4\)/],
    ['::ffff:169.254.1.1', /link-local \(IPv4-mapped\)/],
  ];
  for (const [address, why] of never) {
    it(`refuses ${address} whatever the setting`, () => {
      assert.match(refusedAddress(address, OFF) ?? 'allowed', why);
      assert.match(refusedAddress(address, ON) ?? 'allowed', why);
      assert.match(refusedAddress(address, ON)!, /which webhooks never reach$/);
    });
  }

  // Special-purpose (RFC 6890, the IANA registries): not public, so refused unless private networks are allowed.
  const special: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['127.255.0.9', /loopback/],
    ['10.1.2.3', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['0.0.0.0', /unspecified/],
    ['0.1.2.3', /unspecified/],
    ['100.64.0.1', /carrier-grade NAT/],
    ['100.127.255.255', /carrier-grade NAT/],
    ['192.0.0.8', /IETF protocol assignments/],
    ['192.0.2.1', /TEST-NET-1/],
    ['192.88.99.1', /6to4 relay/],
    ['198.18.0.1', /benchmarking/],
    ['198.19.255.255', /benchmarking/],
    ['198.51.100.7', /TEST-NET-2/],
    ['203.0.113.9', /TEST-NET-3/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['255.255.255.254', /reserved/],
    ['255.255.255.255', /limited broadcast/],
    ['::', /unspecified/],
    ['::1', /loopback/],
    ['::ffff:127.0.0.1', /loopback \(IPv4-mapped\)/],
    ['::ffff:7f00:1', /loopback \(IPv4-mapped\)/],
    ['::ffff:10.0.0.1', /private \(IPv4-mapped\)/],
    ['::ffff:192.0.2.1', /TEST-NET-1\) \(IPv4-mapped\)/],
    ['::127.0.0.1', /loopback \(IPv4-compatible\)/],
    ['64:ff9b::7f00:1', /loopback \(NAT64\)/],
    ['64:ff9b::c633:6401', /TEST-NET-2\) \(NAT64\)/],
    ['64:ff9b:1::808:808', /local-use NAT64/],
    ['2002:7f00:1::', /loopback \(6to4\)/],
    ['2002:c0a8:101::1', /private \(6to4\)/],
    ['100::1', /discard-only/],
    ['2001::1', /IETF protocol assignments/],
    ['2001:1ff:ffff::1', /IETF protocol assignments/],
    ['2001:db8::1', /documentation/],
    ['3fff::1', /documentation/],
    ['5f00::1', /segment routing/],
    ['fc00::1', /unique local/],
    ['fd12:3456::1', /unique local/],
    ['fec0::1', /site-local/],
    ['ff02::1', /multicast/],
    ['4000::1', /outside global unicast/],
    ['::2', /IPv4-compatible/],
  ];
  for (const [address, why] of special) {
    it(`refuses ${address} unless private networks are allowed`, () => {
      assert.match(refusedAddress(address, OFF) ?? 'allowed', why);
      assert.match(refusedAddress(address, OFF)!, /\(WEBHOOK_ALLOW_PRIVATE_NETWORKS is off\)$/);
      assert.equal(refusedAddress(address, ON), null);
    });
  }

  const publicAddresses = [
    '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '169.253.255.255', '169.255.0.1', '192.0.1.1', '198.20.0.1', '223.255.255.255',
    '2606:4700:4700::1111', '2001:4860:4860::8888', '2001:200::1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1',
  ];
  for (const address of publicAddresses) {
    it(`allows the public address ${address}`, () => {
      assert.equal(refusedAddress(address, OFF), null);
      assert.equal(refusedAddress(address, ON), null);
    });
  }

  it('refuses what is not an IP address', () => {
    assert.equal(refusedAddress('example.com', ON), 'not an IP address');
    assert.equal(classifyAddress('example.com'), undefined);
  });
});

describe('webhooks: the address check at each delivery (a resolver of the test stands for DNS)', () => {
  const event = (url: string) => ({ url, secret: SECRET, eventId: 'evt_1', body: '{}' });
  const resolvingTo = (...addresses: string[]) => {
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    return { asked, resolve };
  };
  let receiver: WebhookReceiver;
  beforeEach(async () => {
    receiver = await new WebhookReceiver().start();
  });
  afterEach(async () => receiver.close());

  it('refuses a host whose addresses include a private one before connecting', async () => {
    const dns = resolvingTo('93.184.215.14', '10.0.0.7');
    const result = await new WebhookSender({ timeoutMs: 1000, ...OFF }, dns.resolve).send(event('https://hooks.example.com/in'), new Date());
    assert.deepEqual(dns.asked, ['hooks.example.com']);
    assert.equal(result.statusCode, null);
    assert.equal(result.error, 'refused: hooks.example.com resolves to 10.0.0.7, a private address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is off)');
  });

  for (const address of ['169.254.169.254', 'fd00:ec2::254', '::ffff:169.254.169.254', 'fe80::1']) {
    it(`refuses a host resolving to ${address} even with private networks allowed, opening no connection`, async () => {
      const dns = resolvingTo('127.0.0.1', address);
      const result = await new WebhookSender({ timeoutMs: 1000, ...ON }, dns.resolve).send(event(`http://metadata.example.com:${new URL(receiver.url()).port}/latest/meta-data/`), new Date());
      assert.equal(result.statusCode, null);
      assert.match(result.error!, new RegExp(`^refused: metadata\\.example\\.com resolves to ${address.replace(/[.:]/g, '\\$&')}, a .* address, which webhooks never reach$`));
      assert.equal(receiver.connections, 0);
    });
  }

  for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/latest/meta-data/', 'http://[::ffff:a9fe:a9fe]/', 'http://100.100.100.200/']) {
    it(`refuses the stored URL ${url} with private networks allowed, without resolving anything`, async () => {
      const dns = resolvingTo('8.8.8.8');
      const result = await new WebhookSender({ timeoutMs: 1000, ...ON }, dns.resolve).send(event(url), new Date());
      assert.deepEqual(dns.asked, []);
      assert.equal(result.statusCode, null);
      assert.match(result.error!, /^refused: .* resolves to .*, a cloud metadata service( \(\w[^)]*\))?( \(IPv4-mapped\))? address, which webhooks never reach$/);
    });
  }

  it('delivers to a host resolving to loopback when private networks are allowed, connecting to the address checked', async () => {
    const dns = resolvingTo('127.0.0.1');
    const result = await new WebhookSender({ timeoutMs: 2000, ...ON }, dns.resolve).send(event(`http://receiver.example.com:${new URL(receiver.url()).port}/hook`), new Date());
    assert.equal(result.error, null);
    assert.equal(result.statusCode, 200);
    assert.equal(receiver.received.length, 1);
    assert.equal(receiver.received[0]!.headers.host, `receiver.example.com:${new URL(receiver.url()).port}`);
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
