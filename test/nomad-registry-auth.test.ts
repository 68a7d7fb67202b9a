import assert from 'node:assert/strict';
import type { RegistryCredential } from '../control/domain/registry-auth.js';
import { jobId, nomadJobFor, registryVariableItems, registryVariablePath, variablePath } from '../control/orchestrator/nomad/job-spec.js';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { authFromTaskConfig, interpolateDriverConfig, resolveTaskSecrets } from './support/fake-nomad/secrets.js';
import { defaultNomadSettings, fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';

/** Passwords that quoting could lose: the secrets hook reads `secret.registry.password=<value>` lines with go-envparse. */
const PASSWORDS = [
  'plain', 'with space', ' padded ', 'quote"double', "quote'single", 'back\\slash\\', '#hash # not a comment', '$HOME ${secret.registry.username} $$',
  'a=b==', 'multi\nline\r\n', 'tab\tbed', 'amp&<lt>', 'é日本😀\u2028', 'del\x7f', 'ctl\x01',
];

/**
 * Registry credentials on Nomad (docs/decisions.md, "Registry credentials on Nomad"): the
 * job holds only `${secret.registry.*}` references in the docker task's `auth` block, and a
 * task `secret` block reads the values from a Variable of the task's own path, so they reach
 * the docker driver's pull and nothing else: not the job, not the container's environment.
 * The fake plays the secrets hook and the driver-config interpolation (fake-nomad/secrets.ts).
 */
describe('registry credentials on Nomad: a secret block, never the job', function () {
  this.timeout(120_000);
  const credential = (password: string): RegistryCredential => ({ registry: 'localhost', username: 'robot', password });

  describe('the job (nomadJobFor)', () => {
    it('holds references to a secret block, and no credential', () => {
      const spec = sampleSpec({ registryAuth: credential('s3cret-in-no-job') });
      const job = nomadJobFor(spec, defaultNomadSettings());
      const task = job.TaskGroups[0]!.Tasks[0]!;
      assert.deepEqual(task.Secrets, [{ Name: 'registry', Provider: 'nomad', Path: `nomad/jobs/${jobId(spec.agentId)}/agent/agent` }]);
      assert.deepEqual(task.Config.auth, [{ username: '${secret.registry.username}', password: '${secret.registry.password}', server_address: 'localhost' }]);
      assert.ok(!JSON.stringify(job).includes('s3cret-in-no-job'));
      assert.ok(!JSON.stringify(task.Env).includes('registry'), 'nothing of it in the environment');
      assert.equal(nomadJobFor(sampleSpec(), defaultNomadSettings()).TaskGroups[0]!.Tasks[0]!.Secrets, undefined, 'none without registry_auth');
    });

    it('refuses an identity token, which the docker driver cannot take from a task', () => {
      assert.throws(() => nomadJobFor(sampleSpec({ registryAuth: { registry: 'localhost', identityToken: 't' } }), defaultNomadSettings()), /identity_token/);
    });

    it('gives the docker driver every password exactly, through the Variable, the secrets hook and the interpolation (ported)', async () => {
      for (const password of PASSWORDS) {
        const spec = sampleSpec({ registryAuth: credential(password) });
        const task = nomadJobFor(spec, defaultNomadSettings()).TaskGroups[0]!.Tasks[0]!;
        const items = registryVariableItems({ username: 'robot', password });
        const secrets = await resolveTaskSecrets(task, (path) => (path === registryVariablePath(spec.agentId) ? items : undefined), () => false);
        assert.ok('values' in secrets, `${JSON.stringify(password)}: ${JSON.stringify(secrets)}`);
        const interpolated = interpolateDriverConfig(task.Config as never, secrets.values);
        assert.ok('config' in interpolated, JSON.stringify(interpolated));
        assert.deepEqual(authFromTaskConfig(interpolated.config), { Username: 'robot', Password: password, ServerAddress: 'localhost' }, JSON.stringify(password));
      }
    });
  });

  describe('on the fake cluster', () => {
    let cluster: FakeCluster;
    let driver: NomadDriver;
    before(async () => {
      ensureTestImage(null);
      cluster = await startFakeCluster();
      driver = fakeClusterDriver(cluster);
    });
    after(async () => {
      await driver?.reconcile([]);
      await driver?.close();
      await cluster?.close();
    });

    it("pulls with the agent's credentials, which are in neither the job nor the container; a deploy without them and the removal delete their Variable", async () => {
      const password = 'fake "pass" word\\ $x #1';
      const spec = sampleSpec({ agentId: 'agt_RegistryAuth00000000', slug: 'private-image-x1', count: 1, image: TEST_IMAGE, registryAuth: credential(password) });
      await driver.submit(spec);
      const alloc = await waitFor('the allocation running', async () => cluster.allocations(jobId(spec.agentId)).find((a) => a.ClientStatus === 'running'), 90_000);
      assert.deepEqual(cluster.registryAuth(alloc.ID), { Username: 'robot', Password: password, ServerAddress: 'localhost' });
      assert.ok(!JSON.stringify(cluster.job(jobId(spec.agentId))).includes(password), 'not in the job as Nomad holds it');
      assert.ok(!JSON.stringify(cluster.variable(variablePath(spec.agentId))).includes('fake'), 'not in the secret env Variable');
      assert.deepEqual(cluster.variable(registryVariablePath(spec.agentId))?.Items, registryVariableItems({ username: 'robot', password }));
      const port = alloc.AllocatedResources.Shared.Ports[0].Value;
      const env = await waitFor('the task answers', () => fetch(`http://127.0.0.1:${port}/cgi-bin/env`).then((r) => (r.ok ? r.text() : undefined)).catch(() => undefined));
      assert.match(env, /\nLLM_PROVIDER=openai\n/, "the task's environment");
      assert.ok(!env.includes('fake "pass"') && !env.includes('robot'), `the container's environment holds no credential:\n${env}`);

      await driver.submit({ ...spec, version: spec.version + 1, registryAuth: undefined });
      assert.equal(cluster.variable(registryVariablePath(spec.agentId)), undefined, 'deleted with the credentials');
      await driver.submit({ ...spec, version: spec.version + 2 });
      assert.ok(cluster.variable(registryVariablePath(spec.agentId)));
      await driver.remove(spec.agentId);
      assert.equal(cluster.variable(registryVariablePath(spec.agentId)), undefined, 'deleted with the job');
    });
  });
});
