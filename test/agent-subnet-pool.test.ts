import { strict as assert } from 'node:assert';
import { addressIn, freeSubnet, parseSubnetPool } from '../contract/agent-subnet-pool.js';
import { interfaceSubnets } from '../control/orchestrator/podman/pool-networks.js';

/** The agent subnet pool: what PODMAN_AGENT_SUBNETS and EDGE_UPSTREAM_SUBNETS accept, and which /24 a new agent network gets. */
describe('the agent subnet pool', () => {
  const pool = parseSubnetPool('PODMAN_AGENT_SUBNETS', '10.89.0.0/16');

  it('holds the addresses of its range and no other', () => {
    assert.equal(pool.contains('10.89.0.1'), true);
    assert.equal(pool.contains('10.89.255.254'), true);
    assert.equal(pool.contains('10.90.0.1'), false);
    assert.equal(pool.contains('10.88.0.5'), false);
    assert.equal(pool.contains('::ffff:10.89.0.1'), false, 'a mapped IPv6 form is not an IPv4 address the edge connects to');
    assert.equal(pool.contains('localhost'), false);
  });

  it('gives the first /24 that no network or interface holds', () => {
    assert.equal(freeSubnet(pool, []), '10.89.0.0/24');
    assert.equal(freeSubnet(pool, ['10.89.0.0/24', '10.88.0.0/16', 'fd00::/64']), '10.89.1.0/24');
    // A smaller range inside a /24, and a wider one over several, both take them.
    assert.equal(freeSubnet(pool, ['10.89.0.128/28', '10.89.1.0/24', '10.89.2.0/23']), '10.89.4.0/24');
    assert.equal(freeSubnet(parseSubnetPool('P', '10.89.0.0/24'), ['10.89.0.0/24']), null, 'a full pool');
    assert.equal(addressIn('10.89.3.0/24', 2), '10.89.3.2');
  });

  it('counts the host\'s own interfaces as taken, as podman does (a LAN inside the pool)', () => {
    const lan = { address: '10.89.0.7', netmask: '255.255.255.0', family: 'IPv4', mac: '00:00:00:00:00:01', internal: false, cidr: '10.89.0.7/24' } as const;
    const v6 = { address: 'fd00::2', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '00:00:00:00:00:01', internal: false, cidr: 'fd00::2/64', scopeid: 0 } as const;
    const subnets = interfaceSubnets({ eth0: [lan, v6], lo: undefined });
    assert.deepEqual(subnets, ['10.89.0.7/24']);
    assert.equal(freeSubnet(pool, subnets), '10.89.1.0/24', 'the LAN\'s /24 is skipped');
  });

  it('refuses what is not an IPv4 range of /8 to /24 without host bits', () => {
    for (const [text, problem] of [
      ['10.89.0.0', /expected an IPv4 range/],
      ['10.89.0.0/25', /n from 8 to 24/],
      ['10.89.0.0/7', /n from 8 to 24/],
      ['300.1.0.0/16', /expected an IPv4 range/],
      ['fd00::/48', /expected an IPv4 range/],
      ['10.89.1.0/16', /host bits set; did you mean 10\.89\.0\.0\/16/],
    ] as const) {
      assert.throws(() => parseSubnetPool('PODMAN_AGENT_SUBNETS', text), (error: Error) => problem.test(error.message) && error.message.startsWith('PODMAN_AGENT_SUBNETS: '), text);
    }
  });
});
