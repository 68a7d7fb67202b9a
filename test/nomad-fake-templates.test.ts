import assert from 'node:assert/strict';
import { nomadJobFor, variablePath } from '../control/orchestrator/nomad/job-spec.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';

/**
 * The fake plays a task's templates with the ported consul-template and go-envparse
 * (test/support/fake-nomad/templates.ts): its containers get the environment Nomad would
 * give them, and a template Nomad could not render or read fails the task as Nomad's does.
 */
describe('the fake Nomad: env templates', function () {
  this.timeout(120_000);
  let cluster: FakeCluster;
  before(async () => {
    cluster = await startFakeCluster();
  });
  after(async () => cluster?.close());

  const nomad = (method: string, path: string, body: unknown) =>
    fetch(cluster.nomadAddr + path, { method, headers: { 'X-Nomad-Token': cluster.nomadToken, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  /** Writes the Variable and registers the agent job of `agentId`, its template optionally replaced. */
  async function run(agentId: string, items: Record<string, string>, options: { image?: string; template?: string } = {}) {
    const spec = sampleSpec({ agentId, count: 1, image: options.image ?? 'registry.invalid/never:1', secretEnv: items });
    const job = nomadJobFor(spec, defaultNomadSettings());
    const task = job.TaskGroups[0]!.Tasks[0]!;
    if (options.template) task.Templates![0]!.EmbeddedTmpl = options.template.replace('PATH', variablePath(agentId));
    const path = variablePath(agentId);
    const variable = await nomad('PUT', `/v1/var/${path}`, { Namespace: job.Namespace, Path: path, Items: items });
    assert.equal(variable.status, 200, await variable.text());
    const registered = await nomad('PUT', '/v1/jobs', { Job: job });
    assert.equal(registered.status, 200, await registered.text());
    return job.ID;
  }

  const settled = (jobId: string, status: string) =>
    waitFor(`the allocation ${status}`, async () => {
      const [alloc] = cluster.allocations(jobId);
      return alloc?.ClientStatus === status ? alloc : undefined;
    }, 90_000);

  it('starts the container with each secret exactly as stored, quotes, newlines, control characters and all', async () => {
    ensureTestImage(null);
    const secrets = { AMPERSAND: 'a&b<c>', NEWLINE: 'l1\nl2', CR: 'a\rb', QUOTES: `"'$=# x`, CONTROL: 'a\x01b\x7f', UNICODE: 'é日本😀\u2028', EMPTY: '', SPACE: ' x ' };
    const jobId = await run('agt_EnvExact000000000000', secrets, { image: TEST_IMAGE });
    const alloc = await settled(jobId, 'running');
    const port = alloc.AllocatedResources.Shared.Ports[0].Value;
    const env = '\n' + (await waitFor('the task answers', () => fetch(`http://127.0.0.1:${port}/cgi-bin/env`).then((r) => r.text()).catch(() => undefined)));
    for (const [key, value] of Object.entries(secrets)) assert.ok(env.includes(`\n${key}=${value}\n`), `${key} did not arrive intact:\n${JSON.stringify(env)}`);
  });

  it("fails the task with Nomad's template event when the render fails: %q of a control character is not JSON", async () => {
    const jobId = await run('agt_EnvQuoted00000000000', { A: 'a\x01b' }, { template: '{{ with nomadVar "PATH" -}}\nA={{ .A | toJSON }}\n{{- end }}\n' });
    const alloc = await settled(jobId, 'failed');
    const killing = alloc.TaskStates.agent.Events.find((event: any) => event.Type === 'Killing');
    assert.equal(killing?.FailsTask, true);
    assert.match(killing.DisplayMessage, /^Template failed: .*error calling MarshalJSON for type dependency\.NomadVarItem: invalid character 'x' in string escape code$/);
    assert.equal(killing.DisplayMessage.includes('a\x01b'), false, 'the secret is not in the event');
  });

  it("fails the task when the env file has a line go-envparse's scanner cannot hold", async () => {
    // 11,000 `<` fit a Variable (11 KB) but render as 66,000 bytes of \u003c.
    const jobId = await run('agt_EnvLong0000000000000', { BIG: '<'.repeat(11_000) });
    const alloc = await settled(jobId, 'failed');
    const killing = alloc.TaskStates.agent.Events.find((event: any) => event.Type === 'Killing');
    assert.equal(killing?.FailsTask, true);
    assert.equal(
      killing.DisplayMessage,
      'Template failed to read environment variables: error parsing env template "agent/secrets/agent.env": error reading: bufio.Scanner: token too long',
    );
  });
});
