import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../control/config.js';

const BASE = { DATABASE_URL: 'postgres://u:p@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('nomad driver: settings', () => {
  it('keeps podman the default and reads no Nomad setting then', () => {
    const config = loadConfig({ ...BASE, NOMAD_ADDR: 'not a url' });
    assert.equal(config.orchestrator, 'podman');
    assert.equal(config.nomad, null);
  });

  it('has the documented defaults with ORCHESTRATOR=nomad', () => {
    const config = loadConfig({ ...BASE, ORCHESTRATOR: 'nomad' });
    assert.equal(config.orchestrator, 'nomad');
    const nomad = config.nomad!;
    assert.deepEqual(
      { nomad: nomad.nomad, consul: nomad.consul },
      {
        nomad: { address: 'http://127.0.0.1:4646', token: null, ca: null, cert: null, key: null, skipVerify: false },
        consul: { address: 'http://127.0.0.1:8500', token: null, ca: null, cert: null, key: null, skipVerify: false },
      },
    );
    assert.deepEqual([nomad.namespace, nomad.region, nomad.datacenters, nomad.mhzPerVcpu, nomad.agentNodePool, nomad.watchMinIntervalMs, nomad.maxConnections], ['default', null, ['dc1'], 1000, 'agents', 1000, 32]);
  });

  it('reads every setting, TLS files included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nomad-tls-'));
    try {
      for (const name of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(join(dir, name), `-----BEGIN ${name}-----`);
      const nomad = loadConfig({
        ...BASE,
        ORCHESTRATOR: 'nomad',
        NOMAD_ADDR: 'https://nomad.internal:4646/',
        NOMAD_TOKEN: 'nomad-token',
        NOMAD_NAMESPACE: 'agents',
        NOMAD_REGION: 'europe',
        NOMAD_DATACENTERS: 'eu1,eu2',
        NOMAD_CACERT: join(dir, 'ca.pem'),
        NOMAD_CLIENT_CERT: join(dir, 'cert.pem'),
        NOMAD_CLIENT_KEY: join(dir, 'key.pem'),
        NOMAD_SKIP_VERIFY: 'true',
        CONSUL_HTTP_ADDR: 'https://consul.internal:8501',
        CONSUL_HTTP_TOKEN: 'consul-token',
        CONSUL_CACERT: join(dir, 'ca.pem'),
        NOMAD_MHZ_PER_VCPU: '2400',
        NOMAD_AGENT_NODE_POOL: 'agent-nodes',
        NOMAD_WATCH_MIN_INTERVAL_MS: '500',
        NOMAD_MAX_CONNECTIONS: '16',
      }).nomad!;
      assert.deepEqual(nomad.nomad, { address: 'https://nomad.internal:4646', token: 'nomad-token', ca: '-----BEGIN ca.pem-----', cert: '-----BEGIN cert.pem-----', key: '-----BEGIN key.pem-----', skipVerify: true });
      assert.deepEqual([nomad.consul.address, nomad.consul.token, nomad.consul.ca], ['https://consul.internal:8501', 'consul-token', '-----BEGIN ca.pem-----']);
      assert.deepEqual([nomad.namespace, nomad.region, nomad.datacenters, nomad.mhzPerVcpu, nomad.agentNodePool, nomad.watchMinIntervalMs, nomad.maxConnections], ['agents', 'europe', ['eu1', 'eu2'], 2400, 'agent-nodes', 500, 16]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports every bad Nomad setting at once', () => {
    assert.throws(
      () => loadConfig({ ...BASE, ORCHESTRATOR: 'nomad', NOMAD_ADDR: 'ftp://x', CONSUL_HTTP_ADDR: 'nope', NOMAD_MHZ_PER_VCPU: '0', NOMAD_CACERT: '/no/such/ca.pem', NOMAD_NAMESPACE: 'a b', NOMAD_DATACENTERS: ' , ', NOMAD_AGENT_NODE_POOL: 'all' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems.map((p) => p.split(':')[0]).sort(), ['CONSUL_HTTP_ADDR', 'NOMAD_ADDR', 'NOMAD_AGENT_NODE_POOL', 'NOMAD_CACERT', 'NOMAD_DATACENTERS', 'NOMAD_MHZ_PER_VCPU', 'NOMAD_NAMESPACE']);
        return true;
      },
    );
    assert.throws(() => loadConfig({ ...BASE, ORCHESTRATOR: 'kubernetes' }), /ORCHESTRATOR: expected one of podman, nomad/);
  });
});
