import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { FakeProvider } from './helpers/fake-provider.js';
import { getJson, postInvoke, TEST_KEYS } from './helpers/runtime.js';

const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitForHealth(url: string, deadlineMs: number): Promise<void> {
  const giveUpAt = Date.now() + deadlineMs;
  for (;;) {
    try {
      await fetch(`${url}/health`);
      return;
    } catch (error) {
      if (Date.now() > giveUpAt) throw new Error(`the container did not answer on ${url} within ${deadlineMs} ms`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

describe('the runtime image', function () {
  // The first build compiles, gathers node_modules and may make the local base image.
  this.timeout(15 * 60_000);

  let fake: FakeProvider;
  let containerName: string | undefined;
  let url: string;
  let image: string;

  before(async () => {
    fake = await FakeProvider.start();
    // The tag the script prints: $RUNTIME_IMAGE, else the control API's default (control/config/runtime-image.ts).
    const built = await run('bash', ['scripts/build-image.sh'], { cwd: PACKAGE_DIR, maxBuffer: 16 * 1024 * 1024 });
    image = built.stdout.trim();
    const { stdout: hostOptions } = await run('bash', ['scripts/podman-run-flags.sh', image], { cwd: PACKAGE_DIR });
    const port = await freePort();
    containerName = `agent-runtime-test-${randomBytes(4).toString('hex')}`;
    await run('podman', [
      'run', '-d', '--name', containerName,
      // What this host needs (OCI runtime, ulimits), as detected by the script.
      ...hostOptions.trim().split(/\s+/).filter(Boolean),
      '--cap-drop', 'all', '--security-opt', 'no-new-privileges', '--pids-limit', '512', '--memory', '512m',
      '-p', `127.0.0.1:${port}:8080`,
      '-e', 'AGENT_ID=agt_image',
      '-e', 'AGENT_NAME=image agent',
      '-e', 'LLM_MODEL=gpt-4o',
      '-e', 'LLM_PROVIDER=openai',
      '-e', `OPENAI_API_KEY=${TEST_KEYS.openai}`,
      '-e', `OPENAI_BASE_URL=${fake.baseUrl('openai', 'host.containers.internal')}`,
      '-e', 'PLATFORM_TEMPLATE_DIR=/app/templates/example',
      image,
    ]);
    url = `http://127.0.0.1:${port}`;
    await waitForHealth(url, 30_000);
  });

  after(async () => {
    if (containerName) await run('podman', ['rm', '-f', '-t', '0', containerName]).catch(() => undefined);
    await fake.close();
  });

  it('reports itself healthy through the published port', async () => {
    const health = await getJson(`${url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok', contract: 'v1', agent_id: 'agt_image' });
  });

  it('describes the agent and the template it was given', async () => {
    const description = await getJson(`${url}/`);
    assert.deepEqual(description.body, {
      agent_id: 'agt_image',
      name: 'image agent',
      provider: 'openai',
      model: 'gpt-4o',
      template: 'example',
      tools: ['add', 'current_time'],
      contract: 'v1',
      traces: { enabled: false },
    });
  });

  it('answers an invoke by calling the provider on the host, running a tool on the way', async () => {
    fake.reply({ toolCalls: [{ name: 'add', args: { a: 40, b: 2 } }] }, { text: 'Forty-two.' });
    const response = await postInvoke(url, { input: 'What is 40 + 2?' });
    assert.equal(response.status, 200);
    assert.equal(response.body.output, 'Forty-two.');
    assert.equal(response.body.agent_id, 'agt_image');
    assert.equal(fake.requests.length, 2);
    assert.equal(fake.requests[0]!.headers.authorization, `Bearer ${TEST_KEYS.openai}`);
    assert.match(fake.requests[1]!.body.messages.find((m: any) => m.role === 'tool').content, /"sum":42/);
  });

  it("runs on the project's Node LTS (.node-version)", async () => {
    const wanted = readFileSync(new URL('../../.node-version', import.meta.url), 'utf8').trim();
    const { stdout } = await run('podman', ['exec', containerName!, 'node', '--version']);
    assert.equal(stdout.trim().replace(/^v/, '').split('.')[0], wanted.split('.')[0], `node ${stdout.trim()} in the image`);
  });

  it('runs as uid 1000, not root', async () => {
    const { stdout } = await run('podman', ['exec', containerName!, 'node', '-e', 'process.stdout.write(`${process.getuid()}:${process.getgid()}`)']);
    assert.equal(stdout, '1000:1000');
  });
});
