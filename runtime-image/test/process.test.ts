import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnMain, startChildRuntime, type ChildRuntime } from './helpers/child-runtime.js';
import { FakeAgentServices } from './helpers/fake-agent-services.js';
import { FakeProvider } from './helpers/fake-provider.js';
import { platformEnv, postInvoke, waitFor } from './helpers/runtime.js';
import { scratchDirectory } from './helpers/scratch-directory.js';

describe('the runtime process', function () {
  // Each test starts Node with tsx, which takes a few seconds on a slow machine.
  this.timeout(60_000);

  let fake: FakeProvider;
  let runtime: ChildRuntime | undefined;

  before(async () => {
    fake = await FakeProvider.start();
  });
  afterEach(() => {
    if (runtime && runtime.process.exitCode === null) runtime.process.kill('SIGKILL');
    runtime = undefined;
    fake.reset();
  });
  after(() => fake.close());

  it('on SIGTERM stops accepting, finishes the request in flight and exits 0', async () => {
    runtime = await startChildRuntime(platformEnv(fake, 'openai'));
    const url = `http://127.0.0.1:${runtime.port}`;
    fake.reply({ text: 'finished despite SIGTERM', delayMs: 1500 });

    const inFlight = postInvoke(url, { input: 'take your time' });
    await fake.receivedRequests(1);
    runtime.process.kill('SIGTERM');
    const { code } = await runtime.exited;
    const answer = await inFlight;

    assert.equal(answer.status, 200);
    assert.equal(answer.body.output, 'finished despite SIGTERM');
    assert.equal(code, 0);
    await assert.rejects(fetch(`${url}/health`), 'no longer accepting connections');
    const lines = runtime.stdout().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.ok(lines.some((line) => line['message'] === 'shutting down' && line['signal'] === 'SIGTERM'));
    assert.ok(lines.some((line) => line['message'] === 'stopped' && line['outcome'] === 'drained'));
  });

  it('on SIGTERM sends the spans of the last invokes before it exits', async () => {
    const services = await FakeAgentServices.start(['token-1']);
    try {
      const tokenFile = join(scratchDirectory('agent-services-token'), 'token');
      writeFileSync(tokenFile, 'token-1\n');
      runtime = await startChildRuntime(platformEnv(fake, 'openai', { AGENT_SERVICES_URL: services.url, AGENT_SERVICES_TOKEN_FILE: tokenFile }));
      fake.reply({ text: 'last answer', delayMs: 300 });
      const inFlight = postInvoke(`http://127.0.0.1:${runtime.port}`, { input: 'one more' });
      await fake.receivedRequests(1);
      runtime.process.kill('SIGTERM');

      assert.equal((await inFlight).status, 200);
      assert.equal((await runtime.exited).code, 0);
      // Its spans finished after the signal, and the periodic export had no time to send them.
      assert.deepEqual(services.spans().map((span) => span.name).sort(), ['chat gpt-4o', 'invoke_agent test agent']);
    } finally {
      await services.close();
    }
  });

  it('refuses new connections while it drains', async () => {
    runtime = await startChildRuntime(platformEnv(fake, 'openai'));
    const url = `http://127.0.0.1:${runtime.port}`;
    fake.reply({ text: 'slow', delayMs: 2000 });
    const inFlight = postInvoke(url, { input: 'slow one' });
    await fake.receivedRequests(1);
    runtime.process.kill('SIGTERM');
    await waitFor(() => runtime!.stdout().includes('"message":"shutting down"'), 'the shutdown log line');

    await assert.rejects(fetch(`${url}/health`, { headers: { connection: 'close' } }));
    assert.equal((await inFlight).status, 200);
    assert.equal((await runtime.exited).code, 0);
  });

  it('cuts requests still running after RUNTIME_SHUTDOWN_GRACE_MS and still exits 0', async () => {
    runtime = await startChildRuntime(platformEnv(fake, 'openai', { RUNTIME_SHUTDOWN_GRACE_MS: '200' }));
    const url = `http://127.0.0.1:${runtime.port}`;
    fake.reply({ text: 'too slow', delayMs: 5000 });
    const inFlight = postInvoke(url, { input: 'very slow' });
    await fake.receivedRequests(1);
    runtime.process.kill('SIGTERM');

    await assert.rejects(inFlight);
    assert.equal((await runtime.exited).code, 0);
    assert.match(runtime.stdout(), /"outcome":"cut"/);
  });

  it('exits non-zero at start with a bad agent.yaml, naming the key', async () => {
    const dir = scratchDirectory('bad-template');
    writeFileSync(join(dir, 'agent.yaml'), 'name: ok\nllm:\n  temperature: warm\n');
    const { exited, stdout, stderr } = spawnMain({ ...platformEnv(fake, 'openai'), PLATFORM_TEMPLATE_DIR: dir });

    const { code } = await exited;

    assert.notEqual(code, 0);
    assert.match(stderr(), /key "llm\.temperature" must be a number/);
    const logLine = JSON.parse(stdout().trim()) as Record<string, unknown>;
    assert.equal(logLine['level'], 'error');
    assert.match(String(logLine['error']), /llm\.temperature/);
  });

  it('exits non-zero at start with an invalid setting, naming the variable', async () => {
    const { exited, stderr } = spawnMain({ ...platformEnv(fake, 'openai'), RUNTIME_SESSION_TTL_SECONDS: '-5' });
    assert.notEqual((await exited).code, 0);
    assert.match(stderr(), /RUNTIME_SESSION_TTL_SECONDS="-5" is invalid/);
  });

  it('exits non-zero at start when AGENT_SERVICES_URL is set and its token file cannot be read', async () => {
    const { exited, stderr } = spawnMain({
      ...platformEnv(fake, 'openai'),
      AGENT_SERVICES_URL: 'http://127.0.0.1:7090',
      AGENT_SERVICES_TOKEN_FILE: join(tmpdir(), 'no-such-agent-services-token'),
    });
    assert.equal((await exited).code, 1);
    assert.match(stderr(), /AGENT_SERVICES_TOKEN_FILE=".*no-such-agent-services-token" cannot be read \(ENOENT\)/);
  });
});
