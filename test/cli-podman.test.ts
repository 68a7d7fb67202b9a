import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser, readUntil, watchOutput } from './support/cli-runner.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { execIn } from './support/orch-helpers.js';
import { waitFor } from './support/wait.js';

/** The test image answering runtime contract v1's /invoke (test/support/test-image.ts, MODE=agent). */
const AGENT_MODE = ['--env', 'MODE=agent'];

/**
 * agentctl against agents that really run: the control API orchestrating podman, authz and
 * the local edge in front, the real binary as a subprocess. Few containers (two that serve,
 * one that never gets healthy), as the machine's cores are shared.
 */
describe('agentctl with running agents (podman, authz, the local edge)', function () {
  this.timeout(240_000);
  let control: TestControl;
  let edge: LocalEdgeStack;
  let user: CliUser;
  let open: { id: string; name: string };
  let closed: { id: string; access_key: string };

  before(async () => {
    control = await startControl({}, { orchestrate: true });
    edge = await startLocalEdgeStack(control);
    user = new CliUser({ AGENTCTL_API_URL: control.baseUrl, AGENTCTL_EDGE_URL: edge.url });
    const registered = await user.run(['register', '--email', `cli-podman-${Date.now()}@example.com`, '--password', 'correct horse battery', '--name', 'Cli Podman']);
    assert.equal(registered.code, 0, registered.stderr);
  });
  after(async () => {
    await edge?.close();
    await control?.close();
    if (user) rmSync(user.configHome, { recursive: true, force: true });
  });

  it('`agents create --deploy --wait` prints the rollout phases and exits 0 once its deployment succeeded', async () => {
    const result = await user.run(['agents', 'create', '--name', 'echo', '--public', '--api-key', 'sk-test', ...AGENT_MODE, '--deploy', '--wait', '--json']);
    assert.equal(result.code, 0, result.stderr);
    open = JSON.parse(result.stdout);
    const phases = result.stderr.split('\n').map((line) => line.split(/[ :]/)[0]);
    assert.deepEqual(phases.filter((phase) => ['queued', 'starting', 'routing'].includes(phase!)), ['queued', 'starting', 'routing'], result.stderr);
    assert.match(result.stderr, /^deployment succeeded$/m);
    const [deployment] = (await user.json(['deployments', open.id])).deployments;
    assert.equal(deployment.status, 'succeeded');
    assert.equal((await user.json(['agents', 'get', open.id])).status, 'running');
  });

  it('`agents deploy --wait` of a running agent exits only when the new version alone serves', async () => {
    const result = await user.run(['agents', 'deploy', open.id, ...AGENT_MODE, '--env', 'ROUND=2', '--wait']);
    assert.equal(result.code, 0, result.stderr);
    // Read right after the exit: the agent was running all along, the deployment is what ended.
    const [newest] = (await user.json(['deployments', open.id])).deployments;
    assert.equal(newest.number, 2);
    assert.equal(newest.status, 'succeeded');
    assert.match(result.stderr, /^draining /m, 'the old replica was drained before the end');
  });

  it('a --wait that ends failed exits 1 with the error the agent shows', async () => {
    const result = await user.run(['agents', 'create', '--name', 'broken', '--api-key', 'sk-test', '--env', 'MODE=exit', '--deploy', '--wait', '--json']);
    assert.equal(result.code, 1, result.stderr);
    const broken = JSON.parse(result.stdout);
    const shown = await user.json(['agents', 'get', broken.id]);
    assert.ok(shown.error, `the agent has an error: ${JSON.stringify(shown)}`);
    assert.ok(result.stderr.includes(shown.error), result.stderr);
    assert.match(result.stderr, /deployment 1 of broken is failed/);
    // Its container restarts no more, but it still holds the account's quota and a network.
    assert.equal((await user.run(['agents', 'delete', broken.id, '--yes'])).code, 0);
  });

  it('invokes a public agent through the edge, as text and as --json', async () => {
    const text = await user.run(['invoke', 'echo', 'hello there']);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, 'echo: hello there\n');
    assert.match(text.stderr, /^session ses-echo$/m);
    const json = await user.json(['invoke', open.id, 'again', '--session', 'ses-7']);
    assert.deepEqual(json, { output: 'echo: again', session_id: 'ses-7', agent_id: open.id });
  });

  it('invokes a private agent with --key and with AGENTCTL_ACCESS_KEY; without a key, exit 1 with the edge’s 401', async () => {
    const created = await user.run(['agents', 'create', '--name', 'secret echo', '--api-key', 'sk-test', ...AGENT_MODE, '--deploy', '--wait', '--json']);
    assert.equal(created.code, 0, created.stderr);
    closed = JSON.parse(created.stdout);
    assert.match(closed.access_key, /^agk_/);

    assert.equal((await user.json(['invoke', closed.id, 'with flag', '--key', closed.access_key])).output, 'echo: with flag');
    assert.equal((await user.json(['invoke', closed.id, 'with env'], { AGENTCTL_ACCESS_KEY: closed.access_key })).output, 'echo: with env');

    const without = await user.run(['invoke', closed.id, 'no key']);
    assert.equal(without.code, 1);
    assert.match(without.stderr, /HTTP_401/);
    assert.match(without.stderr, /AGENTCTL_ACCESS_KEY/);
    const wrong = await user.run(['invoke', closed.id, 'wrong key', '--key', 'agk_wrong']);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /HTTP_401/);
  });

  it('`invoke --stream` prints the deltas as one answer, and with --json one event per line', async () => {
    const text = await user.run(['invoke', open.id, 'stream me', '--stream']);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, 'echo: stream me \n');
    const events = await user.run(['invoke', open.id, 'stream me', '--stream', '--json']);
    assert.equal(events.code, 0, events.stderr);
    const parsed = events.stdout.trim().split('\n').map((line) => JSON.parse(line));
    assert.deepEqual(parsed.map((e: { event: string }) => e.event), ['delta', 'delta', 'delta', 'done']);
    assert.deepEqual(parsed.slice(0, 3).map((e: { data: { text: string } }) => e.data.text).join(''), 'echo: stream me ');
    assert.equal(parsed[3].data.agent_id, open.id);
  });

  it('shows logs filtered by --level, --replica and --limit, and --follow prints a new line', async () => {
    const all = (await user.json(['logs', open.id])).logs as { replica_id: string; level: string; message: string }[];
    assert.ok(all.some((entry) => entry.level === 'warn' && /agent serving/.test(entry.message)), JSON.stringify(all));
    assert.ok(all.some((entry) => entry.level === 'info' && /invoked: hello there/.test(entry.message)), JSON.stringify(all));

    const warnings = (await user.json(['logs', open.id, '--level', 'warn'])).logs as typeof all;
    assert.ok(warnings.length > 0 && warnings.every((entry) => entry.level === 'warn' || entry.level === 'error'), JSON.stringify(warnings));
    const replica = all.at(-1)!.replica_id;
    const ofReplica = (await user.json(['logs', open.id, '--replica', replica])).logs as typeof all;
    assert.ok(ofReplica.length > 0 && ofReplica.every((entry) => entry.replica_id === replica));
    assert.deepEqual((await user.json(['logs', open.id, '--replica', 'no-such-replica'])).logs, []);
    assert.deepEqual((await user.json(['logs', open.id, '--limit', '1'])).logs, [all.at(-1)]);
    const plain = await user.run(['logs', open.id, '--level', 'warn']);
    assert.match(plain.stdout, /^\S+ \S+ WARN  .*agent serving/m);

    // --follow starts with the recent lines; one written after that must follow them.
    const follow = watchOutput(user.start(['logs', open.id, '--follow', '--json']));
    try {
      await follow.until(/agent serving/);
      assert.equal((await user.run(['invoke', open.id, 'followed now'])).code, 0);
      const lines = (await follow.until(/invoked: followed now[^\n]*\n/)).trim().split('\n').map((line) => JSON.parse(line));
      assert.match(lines.at(-1).message, /invoked: followed now/);
    } finally {
      follow.stop();
    }
  });

  it('shows the invocation of each line with --invocations and one invocation’s lines with --invocation', async () => {
    const replica = (await user.json(['logs', open.id])).logs.at(-1).replica_id as string;
    const invocation = randomBytes(16).toString('hex');
    // As the default runtime logs during a traced invoke (runtime-image/src/log-context.ts).
    const traced = `{"level":"warn","message":"traced line","trace_id":"${invocation}"}`;
    const written = await execIn(control, replica, `echo '${traced}' > /proc/1/fd/1`);
    assert.equal(written.code, 0, written.stderr);
    const shown = await waitFor('the traced line in agentctl logs', async () => {
      const result = await user.run(['logs', open.id, '--invocations']);
      return result.stdout.includes('traced line') ? result.stdout : undefined;
    }, 10_000, 200);
    assert.match(shown, new RegExp(`^\\S+ ${replica} WARN  ${invocation} \\{.*"message":"traced line"`, 'm'));
    assert.match(shown, /^\S+ \S+ WARN  - {31} .*agent serving/m, 'a line of no invocation has a dash as wide');
    const plain = (await user.run(['logs', open.id])).stdout;
    assert.match(plain, new RegExp(`^\\S+ ${replica} WARN  \\{.*"trace_id":"${invocation}"`, 'm'), 'the column only when asked');

    const one = await user.run(['logs', open.id, '--invocation', invocation]);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(one.stdout.trim().split('\n').length, 1, one.stdout);
    assert.match(one.stdout, /WARN  \{.*"message":"traced line"/);
    assert.deepEqual((await user.json(['logs', open.id, '--invocation', invocation])).logs.map((entry: { invocation_id: string }) => entry.invocation_id), [invocation]);
    const invalid = await user.run(['logs', open.id, '--invocation', 'not-an-id']);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /VALIDATION_ERROR|invocation_id/);
  });

  it('shows metrics once and with --watch (stopped after one refresh), as a table and as --json', async () => {
    const sample = await user.json(['metrics', open.id]);
    assert.equal(sample.replicas, 1);
    assert.equal(typeof sample.cpu_percent, 'number');
    // The edge's figures of the last minute: a request just made shows up within seconds.
    await user.json(['invoke', open.id, 'counted']);
    await waitFor('the invoke in agentctl metrics', async () => ((await user.json(['metrics', open.id])).request_count >= 1 ? true : undefined), 10_000, 500);
    assert.match((await user.run(['metrics', open.id])).stdout, /^TIME\s+REPLICAS\s+CPU %.*REQUESTS 60S\s+5XX 60S\s+AVG MS\s+P95 MS/);

    const watched = await readUntil(user.start(['metrics', open.id, '--watch', '--interval', '1', '--json']), /\n/);
    assert.equal(JSON.parse(watched.split('\n')[0]!).replicas, 1);
    const table = await readUntil(user.start(['metrics', open.id, '--watch', '--interval', '1']), /\n\S+\s+1\s+\d/);
    assert.match(table, /^TIME\s+REPLICAS/);
  });
});
