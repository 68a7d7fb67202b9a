import assert from 'node:assert/strict';
import { startControl, type ApiResponse, type RequestOptions, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { createRunningAgent, waitFor } from './support/orch-helpers.js';

/**
 * Issue 15's "done when" on podman: three deploys with different env values (one of them
 * secret), then a rollback to the first. The replica serving afterwards runs the first's
 * configuration, read back through the test image's env page, and no API answer carries
 * a secret.
 */
describe('deployments on podman: a rollback runs the target configuration again', function () {
  this.timeout(240_000);
  let control: TestControl;
  /** Every answer of the control API in this test, to search for secrets. */
  const answers: ApiResponse[] = [];

  before(async () => {
    control = await startControl({}, { orchestrate: true });
  });
  after(async () => control?.close());

  const call = async (method: string, path: string, options: RequestOptions) => {
    const response = await control.request(method, path, options);
    answers.push(response);
    return response;
  };

  const SECRETS = ['secret-value-one', 'secret-value-two', 'secret-value-three'];
  const envOf = (n: number) => [
    { key: 'MODE', value: 'serve' },
    { key: 'PLAIN', value: `plain-${n}` },
    { key: 'TOKEN', value: SECRETS[n - 1]!, secret: true },
  ];

  /** The env of every routed replica once all of them show `plain` (the old ones drained). */
  async function servedEnv(agentId: string, plain: string): Promise<Map<string, string>> {
    return waitFor(`every replica of ${agentId} to serve PLAIN=${plain}`, async () => {
      const routed = (await control.driver!.status(agentId))?.replicas.filter((r) => r.state === 'running' && r.address) ?? [];
      const envs = await Promise.all(routed.map(async (r) => parseEnv(await (await fetch(`http://${r.address}/cgi-bin/env`)).text())));
      return envs.length > 0 && envs.every((env) => env.get('PLAIN') === plain) ? envs[0] : undefined;
    }, 90_000);
  }

  /** Waits until the agent's newest deployment has ended, and returns its status. */
  async function newestEnded(id: string, token: string): Promise<string> {
    return waitFor('the newest deployment to end', async () => {
      const newest = (await call('GET', `/agents/${id}/deployments?page_size=1`, { token })).body.deployments[0];
      return newest.status === 'in_progress' ? undefined : newest.status;
    }, 90_000);
  }

  it('serves the first deployment\'s env again after deploys of two others and a rollback to it', async () => {
    const { token } = await control.signUp();
    const { id, agent } = await createRunningAgent(control, token, { api_key: 'sk-model-key-of-the-test', deploy: { env: envOf(1) } });
    answers.push({ status: 200, body: agent, headers: new Headers() });
    assert.equal((await servedEnv(id, 'plain-1')).get('TOKEN'), SECRETS[0]);
    assert.equal(await newestEnded(id, token), 'succeeded');
    for (const n of [2, 3]) {
      expectStatus(await call('POST', `/agents/${id}/deploy`, { token, body: { env: envOf(n) } }), 202);
      assert.equal((await servedEnv(id, `plain-${n}`)).get('TOKEN'), SECRETS[n - 1]);
      assert.equal(await newestEnded(id, token), 'succeeded');
    }

    const before = await call('GET', `/agents/${id}/deployments`, { token });
    const first = before.body.deployments.find((d: any) => d.number === 1);
    const rolledBack = await call('POST', `/agents/${id}/rollback`, { token, body: { deployment_id: first.id } });
    expectStatus(rolledBack, 202);

    const served = await servedEnv(id, 'plain-1');
    assert.equal(served.get('TOKEN'), SECRETS[0]);
    assert.equal(served.get('OPENAI_API_KEY'), 'sk-model-key-of-the-test');
    assert.equal(served.get('LLM_MODEL'), 'gpt-4o');
    assert.equal(await newestEnded(id, token), 'succeeded');

    const history = await call('GET', `/agents/${id}/deployments`, { token });
    expectStatus(history, 200);
    const deployments = history.body.deployments;
    assert.deepEqual(deployments.map((d: any) => d.number), [4, 3, 2, 1]);
    assert.equal(deployments[0].rollback_of, first.id);
    assert.equal(deployments[0].agent_version, rolledBack.body.version);
    assert.deepEqual(deployments[0].deploy, first.deploy);
    for (const d of deployments) {
      assert.equal(d.status, 'succeeded', `deployment ${d.number}`);
      assert.ok(d.finished_at, `deployment ${d.number} has finished_at`);
      assert.equal(d.nomad_job_version, null);
    }
    for (const single of deployments) answers.push(await control.request('GET', `/agents/${id}/deployments/${single.id}`, { token }));

    for (const answer of answers) {
      const text = JSON.stringify(answer.body);
      for (const secret of [...SECRETS, 'sk-model-key-of-the-test']) assert.ok(!text.includes(secret), `${secret} in an answer: ${text}`);
    }
  });
});

function parseEnv(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return env;
}
