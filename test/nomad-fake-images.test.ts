import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { LOCAL_RUNTIME_IMAGE } from '../control/config/runtime-image.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createImage, parseDockerImage } from './support/fake-nomad/docker-image.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';

type Json = Record<string, any>;

/**
 * Images as Nomad's docker driver gets them (drivers/docker/driver.go, `createImage` and
 * `pullImage`, ported in test/support/fake-nomad/docker-image.ts): one tagged "latest", or
 * untagged, is pulled at every start even when the node holds it, so without a registry
 * that serves it the task fails to pull; any other tag on the node is used as it is.
 */
describe("the fake Nomad's docker driver: images as Nomad gets them", function () {
  this.timeout(120_000);

  describe('the decision (createImage, parseDockerImage)', () => {
    const ON_NODE = { onNode: true, served: false, forcePull: false };

    it('pulls an image tagged "latest" or untagged whatever the node holds, and fails when no registry serves it', () => {
      for (const image of ['localhost/agent-runtime:latest', 'localhost/agent-runtime', 'registry.example.com:5000/agent-runtime']) {
        assert.equal(parseDockerImage(image).tag, 'latest', image);
        assert.deepEqual(createImage(image, ON_NODE), { pulls: true, available: false }, image);
        assert.deepEqual(createImage(image, { ...ON_NODE, served: true }), { pulls: true, available: true }, image);
      }
    });

    it('uses any other tag, and a digest, from the node; pulls them only when missing or with force_pull', () => {
      const digest = `registry.example.com/agent-runtime@sha256:${'a'.repeat(64)}`;
      assert.deepEqual(parseDockerImage(digest), { repo: digest, tag: '' });
      for (const image of [LOCAL_RUNTIME_IMAGE, 'registry.example.com:5000/agent-runtime:0.1.0-3f2c1ab', digest]) {
        assert.deepEqual(createImage(image, ON_NODE), { pulls: false, available: true }, image);
        assert.deepEqual(createImage(image, { ...ON_NODE, onNode: false }), { pulls: true, available: false }, image);
        assert.deepEqual(createImage(image, { ...ON_NODE, forcePull: true }), { pulls: true, available: false }, image);
      }
    });
  });

  describe('on the fake client (real containers)', () => {
    const LOADED_LATEST = 'localhost/fake-images-loaded:latest';
    const LOADED_UNTAGGED = 'localhost/fake-images-untagged';
    const SERVED_LATEST = 'localhost/fake-images-served:latest';
    const example = (): Json => JSON.parse(readFileSync('nomad-jobs/agent.example.json', 'utf8'));
    const EXAMPLE_IMAGE: string = example().Job.TaskGroups[0].Tasks[0].Config.image;
    const TAGGED = [LOADED_LATEST, LOADED_UNTAGGED, SERVED_LATEST, EXAMPLE_IMAGE];
    let cluster: FakeCluster;

    before(async () => {
      ensureTestImage('runc');
      // Each as if `docker load`ed on the node: the host's podman holds it.
      for (const image of TAGGED) execFileSync('podman', ['tag', TEST_IMAGE, image]);
      cluster = await startFakeCluster({ registryImages: [SERVED_LATEST] });
    });
    after(async () => {
      await cluster?.close();
      for (const image of TAGGED) execFileSync('podman', ['rmi', image], { stdio: 'ignore' });
    });

    const nomad = (method: string, path: string, body: unknown) =>
      fetch(cluster.nomadAddr + path, { method, headers: { 'X-Nomad-Token': cluster.nomadToken, 'content-type': 'application/json' }, body: JSON.stringify(body) });

    /** Registers nomad-jobs/agent.example.json as job `id`, one replica of `image`, no restart, its Variable written. */
    async function run(id: string, image: string): Promise<void> {
      const request = example();
      request.Job.ID = request.Job.Name = id;
      const group = request.Job.TaskGroups[0];
      group.Count = 1;
      group.RestartPolicy = { ...group.RestartPolicy, Attempts: 0 };
      group.Tasks[0].Config.image = image;
      group.Tasks[0].Templates[0].EmbeddedTmpl = group.Tasks[0].Templates[0].EmbeddedTmpl.replace(/agent-agt_[A-Za-z0-9]+/, id);
      assert.equal((await nomad('PUT', `/v1/var/nomad/jobs/${id}`, { Namespace: 'default', Path: `nomad/jobs/${id}`, Items: { OPENAI_API_KEY: 'sk-test' } })).status, 200);
      const response = await nomad('PUT', '/v1/jobs', request);
      assert.equal(response.status, 200, await response.text());
    }

    const settled = (id: string) => waitFor(`${id} running or failed`, async () => {
      const [allocation] = cluster.allocations(id);
      return allocation && ['running', 'failed'].includes(allocation.ClientStatus) ? allocation : undefined;
    });
    const eventsOf = (allocation: Json): Json[] => allocation.TaskStates.agent.Events;

    it('fails a task whose image is tagged "latest" or untagged and in no registry, though the node holds it, with "Failed to pull"', async () => {
      for (const [id, image] of [['agent-loaded-latest', LOADED_LATEST], ['agent-loaded-untagged', LOADED_UNTAGGED]] as const) {
        await run(id, image);
        const allocation = await settled(id);
        assert.equal(allocation.ClientStatus, 'failed', image);
        const events = eventsOf(allocation);
        assert.deepEqual(events.map((e) => e.Type).filter((type) => ['Driver', 'Driver Failure', 'Not Restarting'].includes(type)), ['Driver', 'Driver Failure', 'Not Restarting']);
        assert.equal(events.find((e) => e.Type === 'Driver')!.DisplayMessage, 'Downloading image');
        assert.match(events.find((e) => e.Type === 'Driver Failure')!.DisplayMessage, new RegExp(`^Failed to pull \`${image}\`: `));
        assert.equal(allocation.TaskStates.agent.Failed, true);
      }
    });

    it('runs a "latest" image a registry serves, after downloading it', async () => {
      await run('agent-served-latest', SERVED_LATEST);
      const allocation = await settled('agent-served-latest');
      assert.equal(allocation.ClientStatus, 'running');
      assert.deepEqual(eventsOf(allocation).filter((e) => e.Type === 'Driver').map((e) => e.Details.image), [SERVED_LATEST]);
    });

    it('runs the shipped example job (nomad-jobs/agent.example.json) from its pinned image on the node, without a pull', async () => {
      assert.notEqual(parseDockerImage(EXAMPLE_IMAGE).tag, 'latest');
      await run('agent-example', EXAMPLE_IMAGE);
      const allocation = await settled('agent-example');
      assert.equal(allocation.ClientStatus, 'running');
      assert.deepEqual(eventsOf(allocation).filter((e) => e.Type === 'Driver' || e.Type === 'Driver Failure'), []);
    });
  });

  describe('the defaults, through the control API (simulated allocations)', () => {
    let cluster: FakeCluster;
    let control: TestControl;

    before(async () => {
      cluster = await startFakeCluster({ simulate: true });
      // RUNTIME_IMAGE unset (empty): the control API's own default.
      control = await startControl({ RUNTIME_IMAGE: '' }, { nomad: cluster });
    });
    after(async () => {
      await control?.close();
      await cluster?.close();
    });

    it('starts an agent of the default runtime image, which the docker driver takes from the node', async () => {
      assert.equal(control.config.runtimeImage, LOCAL_RUNTIME_IMAGE);
      const { token } = await control.signUp();
      const created = await control.request('POST', '/agents', { token, body: { name: 'default-image', api_key: 'sk-test', deploy: { replicas: 1 } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const jobId = `agent-${created.body.id}`;
      const allocation = await waitFor('an allocation settled', async () => {
        const [first] = cluster.allocations(jobId);
        return first && ['running', 'failed'].includes(first.ClientStatus) ? first : undefined;
      }, 30_000);
      assert.equal(cluster.job(jobId)!.TaskGroups[0].Tasks[0].Config.image, LOCAL_RUNTIME_IMAGE);
      assert.equal(allocation.ClientStatus, 'running');
    });

    it('fails, as Nomad would, an agent whose image is the old default, localhost/agent-runtime:latest', async () => {
      const { token } = await control.signUp();
      const created = await control.request('POST', '/agents', {
        token, body: { name: 'latest-image', api_key: 'sk-test', deploy: { image: 'localhost/agent-runtime:latest', replicas: 1 } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const shown = await waitFor('the agent failed', async () => {
        const agent = (await control.request('GET', `/agents/${created.body.id}`, { token })).body;
        return agent.status === 'failed' ? agent : undefined;
      }, 30_000);
      assert.match(shown.error, /could not be pulled: Failed to pull `localhost\/agent-runtime:latest`/);
    });
  });
});
