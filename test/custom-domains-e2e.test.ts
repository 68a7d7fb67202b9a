import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { request as httpsRequest } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { freePort } from '../scripts/lib/local-services.js';
import { ensureLocalTls } from '../scripts/lib/local-tls.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { runReplica } from './support/in-memory-driver.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { edgeRequest, startUpstream, type TestUpstream } from './support/edge-upstream.js';
import { startPebble, type RunningPebble } from './support/pebble.js';
import { waitFor } from './support/wait.js';

/**
 * Custom domains end to end (issue 34), on real parts: Debian's Pebble is the ACME CA and
 * pebble-challtestsrv the DNS that both Pebble and the control API (DNS_RESOLVER) read;
 * Pebble's VA fetches the HTTP-01 answer from the local edge's plain port, which authz
 * answers from Redis; the certificate is served by the local edge's HTTPS by SNI, and
 * the hostname routes to the agent's replica through the same Check as its platform name.
 */
describe('custom domains: add → TXT → verified → issued → HTTPS to the agent → delete, against Pebble', function () {
  this.timeout(120_000);
  let pebble: RunningPebble;
  let control: TestControl;
  let edge: LocalEdgeStack;
  let replica: TestUpstream;
  let work: string;
  /** Each case signs up its own account: the free plan allows one custom domain. */
  let token: string;
  let agentDomainCa: string;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'custom-domains-'));
    const edgePort = await freePort();
    // Pebble refuses names under blocked.test (rejectedIdentifier): the CA's refusal, for real.
    // Certificates of an hour: renewal comes 40 minutes in, within the test sessions' lifetime on the control's clock.
    pebble = await startPebble({ httpPort: edgePort, domainBlocklist: ['blocked.test'], certificateValiditySeconds: 3600 });
    const caFile = join(work, 'pebble-https-ca.pem');
    writeFileSync(caFile, pebble.caPem);
    control = await startControl({
      DNS_RESOLVER: pebble.dnsAddress,
      ACME_DIRECTORY_URL: pebble.directoryUrl,
      ACME_CA_FILE: caFile,
      ACME_EMAIL: 'ops@example.test',
      DOMAIN_CHECK_INTERVAL_SECONDS: '1',
    });
    await control.control.loops.domains.start();
    const tls = ensureLocalTls({ dir: join(work, 'tls'), domain: control.config.agentUrl.domain });
    agentDomainCa = tls.caFile;
    edge = await startLocalEdgeStack(control, { port: edgePort, tls: { certFile: tls.certFile, keyFile: tls.keyFile } });
    replica = await startUpstream('replica');
  });
  beforeEach(async () => {
    ({ token } = await control.signUp());
  });
  after(async () => {
    await control?.control.loops.domains.stop();
    await edge?.close();
    await replica?.close();
    await control?.close();
    await pebble?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  async function runningAgent(access: 'public' | 'private') {
    const created = await control.request('POST', '/agents', { token, body: { name: `domains ${access}`, api_key: 'sk-test', access, deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const slug = new URL(created.body.url).hostname.split('.')[0]!;
    await runReplica(control, { id: created.body.id, slug }, replica.address);
    return { id: created.body.id as string, slug, accessKey: created.body.access_key as string | null };
  }

  /** GETs `path` over HTTPS at `hostname` (SNI and Host), trusting only `ca`; the served leaf too. */
  function httpsGet(hostname: string, path: string, ca: string, headers: Record<string, string> = {}, localAddress = '127.0.0.1') {
    return new Promise<{ status: number; body: string; leaf: PeerCertificate }>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port: edge.httpsPort!, localAddress, servername: hostname, path, headers: { host: hostname, ...headers }, ca, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, leaf: (res.socket as TLSSocket).getPeerCertificate() }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  const domainOf = async (agentId: string, domainId: string) => (await control.request('GET', `/agents/${agentId}/domains/${domainId}`, { token })).body;

  async function activate(agentId: string, hostname: string) {
    const created = await control.request('POST', `/agents/${agentId}/domains`, { token, body: { hostname } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.status, 'pending_verification');
    const { name, value } = created.body.verification;

    // No TXT record yet: the check says so and the domain waits, routing nothing.
    const waiting = await waitFor('the missing TXT record to be reported', async () => {
      const domain = await domainOf(agentId, created.body.id);
      return domain.reason ? domain : undefined;
    }, 30_000);
    assert.equal(waiting.status, 'pending_verification');
    assert.match(waiting.reason, new RegExp(name.replace(/\./g, '\\.')));

    await pebble.addA(hostname, '127.0.0.1');
    await pebble.addTxt(name, value);
    const verify = await control.request('POST', `/agents/${agentId}/domains/${created.body.id}/verify`, { token });
    assert.equal(verify.status, 202, JSON.stringify(verify.body));
    const active = await waitFor('the domain active', async () => {
      const domain = await domainOf(agentId, created.body.id);
      if (domain.status === 'failed') throw new Error(`domain failed: ${domain.reason}\n${pebble.output().slice(-2000)}`);
      return domain.status === 'active' ? domain : undefined;
    }, 90_000);
    assert.equal(active.reason, null);
    assert.ok(active.certificate, 'the certificate is described');
    assert.equal(JSON.stringify(active).includes('PRIVATE KEY'), false, 'the key never leaves the row');
    return active;
  }

  it('issues a certificate for a public agent\'s hostname, serves it by SNI, routes to the replica, and stops at once on delete', async () => {
    const agent = await runningAgent('public');
    const hostname = `chat-${agent.slug.slice(-6)}.customer.test`;
    const domain = await activate(agent.id, hostname);

    const root = await pebble.rootPem();
    const answer = await httpsGet(hostname, '/invoke?from=custom', root);
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).url, '/invoke?from=custom', 'the replica answered');
    assert.equal(answer.leaf.subjectaltname, `DNS:${hostname}`);
    assert.equal(answer.leaf.serialNumber, domain.certificate.serial);
    // The chain verifies against Pebble's root for that name (the request above would have failed otherwise);
    // the agent's platform name still gets the agent domain's certificate, from the local CA.
    const platform = await httpsGet(`${agent.slug}.${control.config.agentUrl.domain}`, '/health', readFileSync(agentDomainCa, 'utf8'));
    assert.equal(platform.status, 200);
    assert.match(platform.leaf.subjectaltname ?? '', /DNS:\*\.agents\.localhost/);

    // The certificate's key is sealed in Postgres, never stored in clear.
    const [row] = await control.db('agent_domains').where({ id: domain.id });
    assert.match(row.private_key_sealed, /^v2\./);
    assert.equal(new X509Certificate(row.certificate_pem).checkHost(hostname), hostname);

    const deleted = await control.request('DELETE', `/agents/${agent.id}/domains/${domain.id}`, { token });
    assert.equal(deleted.status, 204);
    const after = await edgeRequest({ port: edge.port, host: hostname, path: '/invoke' });
    assert.equal(after.status, 404, 'the very next request after the 204 finds no agent');
    assert.equal(await control.redis.hget(edgeKeyNames.domainHosts, hostname), null);
  });

  it('renews when a third of the lifetime is left: the new serial is served without a restart, and no request fails during the swap', async () => {
    const agent = await runningAgent('public');
    const hostname = `renew-${agent.slug.slice(-6)}.customer.test`;
    const first = await activate(agent.id, hostname);
    const root = await pebble.rootPem();
    const { not_before: notBefore, not_after: notAfter, renew_after: renewAfter } = first.certificate;
    const lifetime = Date.parse(notAfter) - Date.parse(notBefore);
    assert.ok(Math.abs(Date.parse(renewAfter) - (Date.parse(notAfter) - lifetime / 3)) < 1000, `renewal planned at two thirds of the lifetime (Pebble has no ARI): ${renewAfter}`);

    // Callers keep coming while the worker renews; each on a new connection, so each handshake picks the certificate anew.
    const served = new Set<string>();
    const statuses: number[] = [];
    let renewed = false;
    const callers = (async () => {
      // Paced, and from addresses of their own, so the agent's rate limits (per caller, per agent) never answer instead.
      for (let caller = 0; !renewed; caller++) {
        const answer = await httpsGet(hostname, '/invoke', root, {}, `127.0.2.${(caller % 250) + 1}`);
        statuses.push(answer.status);
        served.add(answer.leaf.serialNumber);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    control.clock.set(new Date(Date.parse(renewAfter) + 1000));
    const second = await waitFor('the renewed certificate', async () => {
      const domain = await domainOf(agent.id, first.id);
      return domain.certificate.serial !== first.certificate.serial ? domain : undefined;
    }, 60_000);
    await waitFor('the new serial at the edge', async () => ((await httpsGet(hostname, '/invoke', root)).leaf.serialNumber === second.certificate.serial ? true : undefined), 10_000);
    renewed = true;
    await callers;
    assert.equal(second.status, 'active');
    const nextLifetime = Date.parse(second.certificate.not_after) - Date.parse(second.certificate.not_before);
    assert.ok(
      Math.abs(Date.parse(second.certificate.renew_after) - (Date.parse(second.certificate.not_after) - nextLifetime / 3)) < 1000,
      `the next renewal is planned from the new certificate: ${JSON.stringify(second.certificate)}`,
    );
    assert.ok(statuses.length > 0 && statuses.every((status) => status === 200), `every request during the swap answered 200: ${statuses.join(',')}`);
    assert.ok(served.has(first.certificate.serial), 'the old certificate served until the new one came');
  });

  it('asks a private agent\'s key on its custom hostname, as on its platform hostname', async () => {
    const agent = await runningAgent('private');
    assert.ok(agent.accessKey);
    const hostname = `private-${agent.slug.slice(-6)}.customer.test`;
    await activate(agent.id, hostname);
    const root = await pebble.rootPem();
    assert.equal((await httpsGet(hostname, '/invoke', root)).status, 401, 'no key: refused');
    assert.equal((await httpsGet(hostname, '/invoke', root, { authorization: 'Bearer not-a-key' })).status, 401);
    const allowed = await httpsGet(hostname, '/invoke', root, { authorization: `Bearer ${agent.accessKey}` });
    assert.equal(allowed.status, 200, allowed.body);
  });

  it('fails with the CA\'s reason when the CA refuses the order, and a taken hostname is refused before any of it', async () => {
    const agent = await runningAgent('public');
    const hostname = `shop-${agent.slug.slice(-6)}.blocked.test`;
    const created = await control.request('POST', `/agents/${agent.id}/domains`, { token, body: { hostname } });
    assert.equal(created.status, 201);
    await pebble.addTxt(created.body.verification.name, created.body.verification.value);
    await control.request('POST', `/agents/${agent.id}/domains/${created.body.id}/verify`, { token });
    const failed = await waitFor('the order to fail', async () => {
      const domain = await domainOf(agent.id, created.body.id);
      return domain.status === 'failed' ? domain : undefined;
    }, 90_000);
    assert.match(failed.reason, /certificate authority refused: .*rejectedIdentifier/);
    assert.equal((await edgeRequest({ port: edge.port, host: hostname, path: '/' })).status, 404, 'a failed domain routes nothing');

    const other = await control.signUp();
    const otherAgent = await control.request('POST', '/agents', { token: other.token, body: { name: 'other' } });
    const taken = await control.request('POST', `/agents/${otherAgent.body.id}/domains`, { token: other.token, body: { hostname } });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.code, 'DOMAIN_TAKEN');
  });

  it('holds TLS to modern versions on the custom hostname too', async () => {
    const refused = await new Promise<string>((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: edge.httpsPort!, servername: 'x.customer.test', maxVersion: 'TLSv1.1', minVersion: 'TLSv1', rejectUnauthorized: false });
      socket.on('secureConnect', () => { socket.destroy(); resolve('connected'); });
      socket.on('error', (error) => resolve(error.message));
    });
    assert.notEqual(refused, 'connected');
  });
});
