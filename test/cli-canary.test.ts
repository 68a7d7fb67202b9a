import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser, type CliResult } from './support/cli-runner.js';
import { InMemoryDriver, runReplica } from './support/in-memory-driver.js';
import { waitFor } from './support/wait.js';

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/**
 * The control API at `baseUrl` as a server without deployment event streams shows it. The
 * real API always serves a deployment's stream; agentctl's fallback, polling the deployment,
 * is for servers from before the streams (and a stream that stops short). So rather than
 * script a whole API, this passes every request on as it came, but sends a deployment's
 * stream to a path the API does not serve: the 404 agentctl gets is the API's own.
 */
async function withoutEventStreams(baseUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const { origin } = new URL(baseUrl);
  const forwarded = ['authorization', 'accept', 'content-type', 'if-match'];
  const server = createServer(async (request, response) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const path = request.url!.replace(/^(\/v1\/agents\/[^/]+\/deployments\/[^/?]+)\/events(?=$|\?)/, '$1/no-events');
      const headers = Object.fromEntries(forwarded.flatMap((name) => (request.headers[name] === undefined ? [] : [[name, String(request.headers[name])]])));
      const answer = await fetch(origin + path, { method: request.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined });
      response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/octet-stream' });
      response.end(Buffer.from(await answer.arrayBuffer()));
    } catch (error) {
      response.writeHead(502).end(String(error));
    }
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

/** Runs agentctl, stopping it after `ms` (code null) so a command that waits too long fails its test instead of hanging it. */
function runWithin(user: CliUser, args: string[], ms: number, extra: Record<string, string> = {}): Promise<CliResult & { stopped: boolean }> {
  const child = user.start(args, extra);
  let stopped = false;
  const deadline = setTimeout(() => ((stopped = true), child.kill('SIGKILL')), ms);
  return new Promise((done, fail) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => (clearTimeout(deadline), done({ code, stdout, stderr, stopped })));
  });
}

/** agentctl's canary deploys (issue 36): `agents deploy --canary`, `deployments promote|abort|get`, and canaries in `deployments list`. */
describe('agentctl canary deploys', function () {
  this.timeout(120_000);

  describe('flags', () => {
    let user: CliUser;
    let unreachable: string;
    before(async () => {
      unreachable = `http://127.0.0.1:${await closedPort()}/v1`;
      user = new CliUser({ AGENTCTL_API_URL: unreachable, AGENTCTL_TOKEN: 'unused' });
    });
    after(() => rmSync(user.configHome, { recursive: true, force: true }));

    /** Exit 2 before any request: the API is unreachable, which would be exit 3. */
    async function refused(args: string[], message: RegExp): Promise<void> {
      const result = await user.run(['agents', 'deploy', 'support-bot', ...args]);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(' '));
    }

    it('refuses a percent that is no whole number from 1 to 99, with exit 2 and no request', async () => {
      for (const percent of ['0', '100', '-5', 'ten', '10.5', '']) await refused(['--canary', percent], /--canary takes a whole percent from 1 to 99/);
    });

    it('refuses an --auto-promote that is no duration', async () => {
      for (const duration of ['5x', '1h30', 'ten minutes', '-60', '']) await refused(['--canary', '10', '--auto-promote', duration], /--auto-promote takes a duration such as 90s, 10m, 1h/);
    });

    it('refuses the settings of a canary without --canary, a number flag that is no number, and an unknown affinity', async () => {
      await refused(['--auto-promote', '10m'], /--auto-promote is a setting of a canary: add --canary <percent>/);
      await refused(['--canary-replicas', '2', '--min-requests', '5'], /--canary-replicas, --min-requests are settings of a canary/);
      await refused(['--canary', '10', '--canary-replicas', 'two'], /--canary-replicas takes a number/);
      await refused(['--canary', '10', '--max-error-ratio', 'low'], /--max-error-ratio takes a number/);
      await refused(['--canary', '10', '--affinity', 'sticky'], /Choices: "none", "caller"/);
      await refused(['--canary', '10', '--detach', '--wait'], /mutually exclusive/);
    });

    it('takes a percent with %, and durations in s, m, h or seconds, going on to the API (exit 3 here)', async () => {
      for (const args of [['--canary', '10%'], ['--canary', '99', '--auto-promote', '90'], ['--canary', '1', '--auto-promote', '1h30m'], ['--canary', '5', '--auto-promote', '10m']]) {
        const result = await user.run(['agents', 'deploy', 'agt_x', ...args]);
        assert.equal(result.code, 3, `${args.join(' ')}: ${result.stderr}`);
      }
    });

    it('names promote, abort and get with examples in help, and completes them', async () => {
      for (const verb of ['promote', 'abort', 'get']) {
        const help = await user.run(['deployments', verb, '--help']);
        assert.equal(help.code, 0);
        assert.match(help.stdout, new RegExp(`^Examples:\\n {2}agentctl deployments ${verb} support-bot`, 'm'));
      }
      assert.equal((await user.run(['deployments', 'promote', 'support-bot'])).code, 2, 'no deployment named');
      const offered = (await user.run(['--get-yargs-completions', 'deployments', ''], { SHELL: '/bin/bash' })).stdout.trim().split('\n');
      for (const verb of ['list', 'get', 'promote', 'abort', 'rollback']) assert.ok(offered.includes(verb), `${verb} in ${offered}`);
      assert.match((await user.run(['agents', 'deploy', '--help'])).stdout, /--canary .*--canary-replicas .*--affinity .*--auto-promote .*--max-error-ratio .*--min-requests/s);
    });
  });

  /**
   * The real control API on the in-memory driver. These need the canary endpoints and
   * fields of issue 36 (POST …/deploy with `strategy`, …/promote, …/abort, the deployment's
   * `strategy`, `phase` and `canary`): before they land they fail with 422 or 404. Each test
   * signs up an account of its own: the free plan's 3 replicas hold one agent and its canaries.
   */
  describe('against the control API', () => {
    let control: TestControl;
    let driver: InMemoryDriver;
    let user: CliUser;
    let token: string;

    before(async () => {
      control = await startControl({});
      driver = control.driver as InMemoryDriver;
    });
    beforeEach(async () => {
      ({ token } = await control.signUp());
      user = new CliUser({ AGENTCTL_API_URL: control.baseUrl, AGENTCTL_TOKEN: token });
    });
    afterEach(() => rmSync(user.configHome, { recursive: true, force: true }));
    after(() => control?.close());

    interface Agent {
      id: string;
      slug: string;
      name: string;
      url: string;
    }

    /**
     * An agent whose first deployment succeeded with a replica running at `address` (the
     * in-memory driver says so): a version a canary can run beside. `createArgs` go to `agents create`.
     */
    async function servingAgent(name: string, address: string, ...createArgs: string[]): Promise<Agent> {
      const created = await user.json(['agents', 'create', '--name', name, '--replicas', '1', '--env', 'V=1', ...createArgs, '--deploy']);
      const agent = { id: created.id as string, slug: new URL(created.url).hostname.split('.')[0]!, name: created.name as string, url: created.url as string };
      await runReplica(control, agent, address);
      await waitFor('the first deployment to succeed', async () => ((await deploymentNumbered(agent.id, 1)).status === 'succeeded' ? true : undefined), 15_000, 100);
      return agent;
    }

    const deploymentNumbered = (agentId: string, number: number) => user.json(['deployments', 'get', agentId, String(number)]);

    /** `agents deploy --canary`, as a test's starting point: returns once the canary serves. */
    async function deployCanary(agent: Agent, ...args: string[]): Promise<void> {
      const deployed = await runWithin(user, ['agents', 'deploy', agent.slug, '--canary', '10', ...args], 30_000);
      assert.equal(deployed.code, 0, deployed.stderr);
    }

    /** The preview URL of the agent's canary deployment `number`: the agent's URL with `<slug>--d<number>` for its name. */
    const previewOf = (agent: Agent, number: number) => agent.url.replace(`//${agent.slug}.`, `//${agent.slug}--d${number}.`);

    /** `text` matched as it is, in a RegExp. */
    const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

    /** Requests to the agent as the edge counts them: its recorder adds them to the control's Redis, where the API reads its figures. */
    async function edgeCounted(agentId: string, requests: { count: number; status: number; ms: number; canary: boolean }[]): Promise<void> {
      const recorder = createRequestFigureRecorder({ redis: control.redis, onError: (error) => assert.fail(error) });
      for (const { count, status, ms, canary } of requests) for (let i = 0; i < count; i += 1) recorder.record(agentId, status, ms, canary);
      await recorder.close();
    }

    it('sends the canary settings as the deploy\'s strategy, and returns once the canary serves while its stream goes on', async () => {
      const agent = await servingAgent('canary every setting', '127.0.0.1:18111', '--image', 'ghcr.io/acme/bot:1', '--port', '8080');
      // --canary-replicas 1: the in-memory driver runs one replica of each version, so a canary of more never serves.
      const result = await runWithin(user, [
        'agents', 'deploy', agent.slug, '--image', 'ghcr.io/acme/bot:2', '--canary', '10%', '--canary-replicas', '1', '--affinity', 'caller',
        '--auto-promote', '10m', '--max-error-ratio', '0.1', '--min-requests', '20',
      ], 30_000);
      assert.equal(result.stopped, false, 'deploy returned with the stream still open');
      assert.equal(result.code, 0, result.stderr);
      const canary = await deploymentNumbered(agent.id, 2);
      assert.deepEqual(canary.strategy, { type: 'canary', percent: 10, replicas: 1, affinity: 'caller', auto_promote_after_seconds: 600, max_error_ratio: 0.1, min_requests: 20 });
      assert.deepEqual([canary.image, canary.status, canary.phase], ['ghcr.io/acme/bot:2', 'in_progress', 'canary'], 'the canary goes on serving');
      assert.match(result.stderr, /^canary: canary serving 10% of requests on 1 replica$/m);
      assert.match(result.stdout, /^canary\s+deployment 2 serves 10% of requests beside the stable version$/m);
      assert.match(result.stdout, new RegExp(`^preview\\s+${escaped(previewOf(agent, 2))}$`, 'm'));
      assert.match(result.stdout, new RegExp(`^promote\\s+agentctl deployments promote ${agent.slug} 2$`, 'm'));
      assert.match(result.stdout, new RegExp(`^abort\\s+agentctl deployments abort ${agent.slug} 2$`, 'm'));
    });

    it('sends only the percent when no other setting is given; with --json the summary goes to stderr', async () => {
      const agent = await servingAgent('canary percent', '127.0.0.1:18113');
      const result = await runWithin(user, ['agents', 'deploy', agent.slug, '--env', 'V=2', '--canary', '10', '--json'], 30_000);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual((await deploymentNumbered(agent.id, 2)).strategy, {
        type: 'canary', percent: 10, replicas: 1, affinity: 'none', auto_promote_after_seconds: null, max_error_ratio: 0.05, min_requests: 50,
      }, "the API's defaults for every setting not sent");
      assert.equal(JSON.parse(result.stdout).id, agent.id, "stdout is the API's JSON alone");
      assert.match(result.stderr, new RegExp(`^promote\\s+agentctl deployments promote ${agent.slug} 2$`, 'm'));
    });

    it('exits 1 with the reason when the canary is aborted before it serves', async () => {
      const agent = await servingAgent('canary crashing', '127.0.0.1:18115');
      driver.failNextSubmitted(agent.id);
      const result = await runWithin(user, ['agents', 'deploy', agent.slug, '--env', 'V=2', '--canary', '10'], 30_000);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /^agentctl: deployment 2 of canary crashing is failed: the canary could not start: exited with code 1; restarted 2 times$/m);
      assert.doesNotMatch(result.stdout, /agentctl deployments promote/);
      assert.equal((await deploymentNumbered(agent.id, 2)).status, 'failed');
    });

    it('polls the deployment until its phase is canary where the API has no event stream', async () => {
      const agent = await servingAgent('canary polled', '127.0.0.1:18117');
      const older = await withoutEventStreams(control.baseUrl);
      try {
        const result = await runWithin(user, ['agents', 'deploy', agent.slug, '--env', 'V=2', '--canary', '10'], 30_000, { AGENTCTL_API_URL: older.url });
        assert.equal(result.code, 0, result.stderr);
        assert.match(result.stderr, /^deployment 2 serves as a canary$/m);
        assert.match(result.stdout, new RegExp(`^preview\\s+${escaped(previewOf(agent, 2))}$`, 'm'));
      } finally {
        await older.close();
      }
    });

    it('--canary with --detach follows nothing and still says how to promote or abort', async () => {
      const agent = await servingAgent('canary detached', '127.0.0.1:18119');
      // The in-memory driver runs one replica of each version: a canary of 2 never serves, so a deploy that followed it would not return.
      const result = await runWithin(user, ['agents', 'deploy', agent.slug, '--env', 'V=2', '--canary', '10', '--canary-replicas', '2', '--detach'], 30_000);
      assert.equal(result.stopped, false, 'returned without waiting for the canary to serve');
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^canary\s+deployment 2 starting, to serve 10% of requests beside the stable version$/m);
      assert.match(result.stdout, new RegExp(`^preview\\s+not yet: agentctl deployments get ${agent.slug} 2 shows it once the canary serves$`, 'm'));
      assert.match(result.stdout, new RegExp(`^abort\\s+agentctl deployments abort ${agent.slug} 2$`, 'm'));
    });

    it('without --canary sends no strategy and follows the rollout to its end, as before', async () => {
      const agent = await servingAgent('canary not', '127.0.0.1:18121');
      const result = await runWithin(user, ['agents', 'deploy', agent.slug, '--env', 'A=1'], 30_000);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /^deployment succeeded$/m);
      const rolled = await deploymentNumbered(agent.id, 2);
      assert.deepEqual([rolled.status, rolled.strategy, rolled.phase, rolled.canary], ['succeeded', null, null, null]);
      assert.deepEqual(rolled.deploy.env, [{ key: 'A', value: '1', secret: false }], 'the env sent, in place of the one before');
    });

    it('promote resolves a number to the id, posts to its promote, and follows the rollout to its end; --detach returns at once', async () => {
      const agent = await servingAgent('canary promote', '127.0.0.1:18123');
      await deployCanary(agent, '--env', 'V=2');
      const canary = await deploymentNumbered(agent.id, 2);
      const result = await runWithin(user, ['deployments', 'promote', agent.slug, '2'], 30_000);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /^promoted: the new version takes all traffic at 1 replica\(s\), then the old drains$/m);
      assert.match(result.stderr, /^deployment succeeded$/m);
      assert.match(result.stdout, new RegExp(`^id\\s+${canary.id}$`, 'm'));
      assert.deepEqual([(await deploymentNumbered(agent.id, 2)).status], ['succeeded']);

      // A promoted rollout that fails: one followed would exit 1 (next test), a detached promote still exits 0.
      await deployCanary(agent, '--env', 'V=3');
      const next = await deploymentNumbered(agent.id, 3);
      driver.failNextSubmitted(agent.id);
      const detached = await runWithin(user, ['deployments', 'promote', agent.id, next.id, '--detach', '--json'], 30_000);
      assert.equal(detached.code, 0, detached.stderr);
      assert.equal(JSON.parse(detached.stdout).id, next.id);
      assert.match(detached.stderr, new RegExp(`^Promoting deployment 3: agentctl deployments get ${agent.slug} 3 shows how far it is$`, 'm'));
      assert.doesNotMatch(detached.stderr, /^deployment /m, 'no end followed');
      await waitFor('the promoted rollout to fail', async () => ((await deploymentNumbered(agent.id, 3)).status === 'failed' ? true : undefined), 15_000, 100);
    });

    it('promote exits 1 when the promoted rollout fails', async () => {
      const agent = await servingAgent('canary promote fails', '127.0.0.1:18125');
      await deployCanary(agent, '--env', 'V=2');
      driver.failNextSubmitted(agent.id);
      const result = await runWithin(user, ['deployments', 'promote', agent.id, '2'], 30_000);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /^agentctl: deployment 2 of canary promote fails is failed: exited with code 1; restarted 2 times$/m);
    });

    it('abort resolves a number to the id, posts to its abort and returns once accepted', async () => {
      const agent = await servingAgent('canary abort', '127.0.0.1:18127');
      await deployCanary(agent, '--env', 'V=2');
      const canary = await deploymentNumbered(agent.id, 2);
      const result = await runWithin(user, ['deployments', 'abort', agent.id, '2', '--json'], 30_000);
      assert.equal(result.code, 0, result.stderr);
      const aborted = JSON.parse(result.stdout);
      assert.deepEqual([aborted.id, aborted.status], [canary.id, 'cancelled']);
      assert.match(result.stderr, /^Aborting canary deployment 2 of canary abort: the stable version takes every request again$/m);
    });

    it("passes on the API's 409 NOT_A_RUNNING_CANARY with exit 1", async () => {
      const agent = await servingAgent('canary not running', '127.0.0.1:18129');
      await deployCanary(agent, '--env', 'V=2');
      const result = await runWithin(user, ['deployments', 'abort', agent.id, '1'], 30_000);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^agentctl: NOT_A_RUNNING_CANARY: This deployment is not a canary that is running now$/m);
    });

    it("lists a serving canary's phase and both versions' figures, and get shows its strategy and preview URL", async () => {
      const agent = await servingAgent('canary figures', '127.0.0.1:18131', '--image', 'ghcr.io/acme/bot:1', '--port', '8080');
      await deployCanary(agent, '--image', 'ghcr.io/acme/bot:2', '--auto-promote', '90m');
      await edgeCounted(agent.id, [
        { count: 1197, status: 200, ms: 120, canary: false },
        { count: 3, status: 500, ms: 120, canary: false },
        { count: 130, status: 200, ms: 110, canary: true },
      ]);
      const [stable, canary] = [await deploymentNumbered(agent.id, 1), await deploymentNumbered(agent.id, 2)];

      const listed = await runWithin(user, ['deployments', 'list', agent.slug], 30_000);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /^#\s+ID\s+STATUS\s+PHASE\s+IMAGE/m);
      assert.match(listed.stdout, new RegExp(`^2\\s+${canary.id}\\s+in_progress\\s+canary 10%\\s+ghcr\\.io/acme/bot:2\\s`, 'm'));
      assert.match(listed.stdout, new RegExp(`^1\\s+${stable.id}\\s+succeeded\\s+-\\s+ghcr\\.io/acme/bot:1\\s`, 'm'));
      assert.match(listed.stdout, new RegExp(`^Deployment 2 \\(canary 10%\\) since ${canary.canary.started_at}, preview ${escaped(previewOf(agent, 2))}:$`, 'm'));
      assert.match(listed.stdout, /^VERSION\s+REQUESTS\s+ERRORS\s+ERROR RATIO\s+AVG MS\s+P95 MS$/m);
      // 1200 requests of 120 ms, all in the 100–250 ms latency bucket: p95 interpolated in it, 100 + 150 × 0.95.
      assert.match(listed.stdout, /^stable\s+1200\s+3\s+0\.3%\s+120\s+242\.5$/m);
      assert.match(listed.stdout, /^canary\s+130\s+0\s+0\.0%\s+110\s+242\.5$/m);
      const fromApi = await control.request('GET', `/agents/${agent.id}/deployments?page=1&page_size=20`, { token });
      assert.deepEqual(JSON.parse((await runWithin(user, ['deployments', 'list', agent.slug, '--json'], 30_000)).stdout), fromApi.body, "--json is the API's JSON");

      const shown = await runWithin(user, ['deployments', 'get', agent.slug, '2'], 30_000);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^phase\s+canary 10%$/m);
      assert.match(shown.stdout, /^strategy\s+canary 10%, 1 replica, affinity none, promoted after 1h30m, aborted above 0\.05 errors once 50 requests answered$/m);
      assert.match(shown.stdout, new RegExp(`^preview\\s+${escaped(previewOf(agent, 2))}$`, 'm'));
      assert.match(shown.stdout, /^canary\s+130\s+0\s+0\.0%\s+110\s+242\.5$/m);
    });

    it('deploys a canary with every setting and shows them as the deployment\'s strategy; abort by number ends it', async () => {
      const agent = await servingAgent('canary settings', '127.0.0.1:18101');
      const deployed = await runWithin(user, [
        'agents', 'deploy', agent.slug, '--env', 'V=2', '--canary', '10', '--canary-replicas', '2', '--affinity', 'caller',
        '--auto-promote', '10m', '--max-error-ratio', '0.1', '--min-requests', '20', '--detach', '--json',
      ], 30_000);
      assert.equal(deployed.code, 0, deployed.stderr);
      assert.match(deployed.stderr, new RegExp(`^abort\\s+agentctl deployments abort ${agent.slug} 2$`, 'm'));
      const canary = await deploymentNumbered(agent.id, 2);
      assert.deepEqual(canary.strategy, { type: 'canary', percent: 10, replicas: 2, affinity: 'caller', auto_promote_after_seconds: 600, max_error_ratio: 0.1, min_requests: 20 });

      // The in-memory driver runs one replica of each version, so a canary of 2 never serves: it is aborted while it starts.
      const aborted = await user.json(['deployments', 'abort', agent.slug, '2']);
      assert.equal(aborted.id, canary.id, 'the number resolved to the id');
      assert.equal(aborted.status, 'cancelled');
      const again = await user.run(['deployments', 'abort', agent.slug, '2']);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /NOT_A_RUNNING_CANARY/);
    });

    it('follows a canary deploy until it serves, lists it as `canary 5%` with defaults filled, and promote by number follows it to its end', async () => {
      const agent = await servingAgent('canary promoted', '127.0.0.1:18102');
      const deployed = await runWithin(user, ['agents', 'deploy', agent.slug, '--env', 'V=2', '--canary', '5'], 30_000);
      assert.equal(deployed.stopped, false, 'deploy returned once the canary served');
      assert.equal(deployed.code, 0, deployed.stderr);
      assert.match(deployed.stdout, /^canary\s+deployment 2 serves 5% of requests/m);
      assert.match(deployed.stdout, /^preview\s+\S+/m);
      assert.match(deployed.stdout, new RegExp(`^promote\\s+agentctl deployments promote ${agent.slug} 2$`, 'm'));

      const canary = await deploymentNumbered(agent.id, 2);
      assert.deepEqual(canary.strategy, { type: 'canary', percent: 5, replicas: 1, affinity: 'none', auto_promote_after_seconds: null, max_error_ratio: 0.05, min_requests: 50 });
      assert.equal(canary.phase, 'canary');
      assert.match((await user.run(['deployments', 'list', agent.slug])).stdout, /^2\s+\S+\s+in_progress\s+canary 5%/m);

      const promoted = await runWithin(user, ['deployments', 'promote', agent.slug, '2'], 30_000);
      assert.equal(promoted.stopped, false, 'the promoted rollout ended');
      assert.equal(promoted.code, 0, promoted.stderr);
      assert.match(promoted.stdout, new RegExp(`^id\\s+${canary.id}$`, 'm'));
      assert.match(promoted.stderr, /^deployment succeeded$/m);
      const ended = await deploymentNumbered(agent.id, 2);
      assert.deepEqual([ended.status, ended.phase], ['succeeded', null]);
    });

    it('refuses a canary where no version runs (CANARY_NOT_POSSIBLE) and a promote of a deployment that is no canary, with exit 1', async () => {
      const idle = await user.json(['agents', 'create', '--name', 'canary idle']);
      const refused = await user.run(['agents', 'deploy', idle.id, '--canary', '10']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /CANARY_NOT_POSSIBLE/);

      const agent = await servingAgent('canary none', '127.0.0.1:18103');
      const notCanary = await user.run(['deployments', 'promote', agent.slug, '1']);
      assert.equal(notCanary.code, 1);
      assert.match(notCanary.stderr, /NOT_A_RUNNING_CANARY/);
      const unknown = await user.run(['deployments', 'promote', agent.slug, '9']);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /DEPLOYMENT_NOT_FOUND/);
    });
  });
});
