import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser, type CliResult } from './support/cli-runner.js';
import { runReplica } from './support/in-memory-driver.js';
import { waitFor } from './support/wait.js';

/** One request the stub API received. */
interface Received {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** An API that answers only what a test scripts (`on`), and records every request: what agentctl sends. */
class StubApi {
  readonly received: Received[] = [];
  private readonly routes = new Map<string, Handler>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => void this.answer(request, response));
    await new Promise<void>((done) => this.server.listen(0, '127.0.0.1', done));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((done) => this.server.close(done));
  }

  reset(): void {
    this.received.length = 0;
    this.routes.clear();
  }

  on(method: string, path: string, handler: Handler): void {
    this.routes.set(`${method} /v1${path}`, handler);
  }

  json(method: string, path: string, status: number, body: unknown): void {
    this.on(method, path, (_request, response) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
  }

  /** A deployment event stream: `events` (`[name, data]`), then held open unless it ends with `end`. */
  stream(path: string, events: [string, unknown][]): void {
    this.on('GET', path, (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const [event, data] of events) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      if (events.some(([event]) => event === 'end')) response.end();
      else response.write(': keep-alive\n\n');
    });
  }

  /** The paths of the requests made with `method`, in order. */
  paths(method: string): string[] {
    return this.received.filter((request) => request.method === method).map((request) => request.path);
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url!, 'http://stub');
    let text = '';
    for await (const chunk of request) text += chunk;
    this.received.push({ method: request.method!, path: url.pathname.replace(/^\/v1/, ''), query: url.searchParams, body: text ? JSON.parse(text) : undefined });
    const handler = this.routes.get(`${request.method} ${url.pathname}`);
    if (handler) return handler(request, response);
    response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'NOT_FOUND', message: `stub: no ${request.method} ${url.pathname}` }));
  }
}

const AGENT = {
  id: 'agt_stub', name: 'stub bot', url: 'http://stub-bot.agents.localhost', status: 'running', replicas: 1, access: 'private',
  deploy: { image: 'ghcr.io/acme/bot:1', replicas: 1, env: [] }, model: 'gpt-4o-mini', version: 4, tags: [], error: null,
};

const DEFAULT_STRATEGY = { type: 'canary', percent: 10, replicas: 1, affinity: 'none', auto_promote_after_seconds: null, max_error_ratio: 0.05, min_requests: 50 };

const FIGURES = {
  stable: { request_count: 1200, error_count: 3, avg_latency_ms: 120, p95_latency_ms: 300 },
  canary: { request_count: 130, error_count: 0, avg_latency_ms: 110, p95_latency_ms: 250 },
};

/** Deployment 3 of the stub agent, a canary serving 10% unless `changes` say otherwise. */
const canaryDeployment = (changes: Record<string, unknown> = {}) => ({
  id: 'dep_canary3', agent_id: AGENT.id, number: 3, agent_version: 4, status: 'in_progress', image: 'ghcr.io/acme/bot:2',
  deploy: { ...AGENT.deploy, image: 'ghcr.io/acme/bot:2' }, model: AGENT.model, system_prompt_sha256: null, rollback_of: null, created_by: null,
  created_at: '2026-01-01T09:00:00Z', finished_at: null, error: null, nomad_job_version: null,
  strategy: DEFAULT_STRATEGY, phase: 'canary',
  canary: { started_at: '2026-01-01T09:00:20Z', preview_url: 'http://stub-bot--d3.agents.localhost', percent: 10, figures: FIGURES },
  ...changes,
});

const stableDeployment = { ...canaryDeployment(), id: 'dep_stable2', number: 2, status: 'succeeded', image: 'ghcr.io/acme/bot:1', strategy: null, phase: null, canary: null };

const listOf = (deployments: unknown[]) => ({ deployments, total: deployments.length, page: 1, page_size: 100, has_next: false });

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
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

  describe('against a stub API', () => {
    const api = new StubApi();
    let user: CliUser;
    before(async () => {
      await api.start();
      user = new CliUser({ AGENTCTL_API_URL: api.url, AGENTCTL_TOKEN: 'stub-token' });
    });
    beforeEach(() => {
      api.reset();
      api.json('GET', `/agents/${AGENT.id}`, 200, AGENT);
      api.json('GET', '/agents', 200, { agents: [AGENT], total: 1, page: 1, page_size: 100, has_next: false });
      api.json('POST', `/agents/${AGENT.id}/deploy`, 202, AGENT);
    });
    after(async () => {
      await api.close();
      rmSync(user.configHome, { recursive: true, force: true });
    });

    const deployBody = () => api.received.find((request) => request.method === 'POST' && request.path === `/agents/${AGENT.id}/deploy`)?.body as Record<string, unknown>;

    it('sends the canary settings as the deploy\'s strategy, and returns once the canary serves while its stream goes on', async () => {
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment({ phase: null, canary: null }), stableDeployment]));
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, 200, canaryDeployment());
      api.stream(`/agents/${AGENT.id}/deployments/dep_canary3/events`, [
        ['progress', { phase: 'starting', replica_id: 'r1', message: 'canary: starting', at: '2026-01-01T09:00:10Z' }],
        ['progress', { phase: 'canary', message: 'canary serves 10% beside deployment 2', at: '2026-01-01T09:00:20Z' }],
      ]);
      const args = ['agents', 'deploy', AGENT.id, '--image', 'ghcr.io/acme/bot:2', '--canary', '10%', '--canary-replicas', '2', '--affinity', 'caller', '--auto-promote', '10m', '--max-error-ratio', '0.1', '--min-requests', '20'];
      const result = await runWithin(user, args, 15_000);
      assert.equal(result.stopped, false, 'deploy returned with the stream still open');
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(deployBody(), {
        image: 'ghcr.io/acme/bot:2',
        strategy: { type: 'canary', percent: 10, replicas: 2, affinity: 'caller', auto_promote_after_seconds: 600, max_error_ratio: 0.1, min_requests: 20 },
      });
      assert.match(result.stderr, /^starting r1: canary: starting$/m);
      assert.match(result.stderr, /^canary: canary serves 10% beside deployment 2$/m);
      assert.match(result.stdout, /^canary\s+deployment 3 serves 10% of requests beside the stable version$/m);
      assert.match(result.stdout, /^preview\s+http:\/\/stub-bot--d3\.agents\.localhost$/m);
      assert.match(result.stdout, /^promote\s+agentctl deployments promote stub-bot 3$/m);
      assert.match(result.stdout, /^abort\s+agentctl deployments abort stub-bot 3$/m);
    });

    it('sends only the percent when no other setting is given; with --json the summary goes to stderr', async () => {
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment({ phase: null, canary: null })]));
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, 200, canaryDeployment());
      api.stream(`/agents/${AGENT.id}/deployments/dep_canary3/events`, [['progress', { phase: 'canary', message: 'serving', at: '2026-01-01T09:00:20Z' }]]);
      const result = await runWithin(user, ['agents', 'deploy', AGENT.id, '--canary', '10', '--json'], 15_000);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(deployBody(), { strategy: { type: 'canary', percent: 10 } });
      assert.equal(JSON.parse(result.stdout).id, AGENT.id, "stdout is the API's JSON alone");
      assert.match(result.stderr, /^promote\s+agentctl deployments promote stub-bot 3$/m);
    });

    it('exits 1 with the reason when the canary is aborted before it serves', async () => {
      const aborted = canaryDeployment({ status: 'cancelled', phase: null, canary: null, error: 'canary replicas crashed past their restart budget' });
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment({ phase: null, canary: null })]));
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, 200, aborted);
      api.stream(`/agents/${AGENT.id}/deployments/dep_canary3/events`, [
        ['progress', { phase: 'failed', replica_id: 'r1', message: 'crashed', at: '2026-01-01T09:00:10Z' }],
        ['progress', { phase: 'aborted', message: 'canary aborted', at: '2026-01-01T09:00:11Z' }],
        ['end', { status: 'cancelled' }],
      ]);
      const result = await runWithin(user, ['agents', 'deploy', AGENT.id, '--canary', '10'], 15_000);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /deployment 3 of stub bot is cancelled: canary replicas crashed past their restart budget/);
      assert.doesNotMatch(result.stdout, /agentctl deployments promote/);
    });

    it('polls the deployment until its phase is canary where the API has no event stream', async () => {
      let reads = 0;
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment({ phase: null, canary: null })]));
      api.on('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, (_request, response) => {
        reads += 1;
        const deployment = reads < 2 ? canaryDeployment({ phase: null, canary: null }) : canaryDeployment();
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(deployment));
      });
      const result = await runWithin(user, ['agents', 'deploy', AGENT.id, '--canary', '10'], 15_000);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /^deployment 3 serves as a canary$/m);
      assert.match(result.stdout, /^preview\s+http:\/\/stub-bot--d3\.agents\.localhost$/m);
    });

    it('--canary with --detach follows nothing and still says how to promote or abort', async () => {
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment({ phase: null, canary: null })]));
      const result = await runWithin(user, ['agents', 'deploy', AGENT.id, '--canary', '10', '--detach'], 15_000);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(api.paths('GET').filter((path) => path.includes('/deployments/')), [], 'no stream nor deployment read');
      assert.match(result.stdout, /^canary\s+deployment 3 starting, to serve 10% of requests/m);
      assert.match(result.stdout, /^preview\s+not yet: agentctl deployments get stub-bot 3 shows it/m);
      assert.match(result.stdout, /^abort\s+agentctl deployments abort stub-bot 3$/m);
    });

    it('without --canary sends no strategy and follows the rollout to its end, as before', async () => {
      const rolling = { ...stableDeployment, id: 'dep_rolling3', number: 3 };
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([{ ...rolling, status: 'in_progress' }]));
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_rolling3`, 200, rolling);
      api.stream(`/agents/${AGENT.id}/deployments/dep_rolling3/events`, [
        ['progress', { phase: 'succeeded', message: '1 of 1 replicas healthy and routed', at: '2026-01-01T09:00:20Z' }],
        ['end', { status: 'succeeded' }],
      ]);
      const result = await runWithin(user, ['agents', 'deploy', AGENT.id, '--env', 'A=1'], 15_000);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(deployBody(), { env: [{ key: 'A', value: '1' }] });
      assert.match(result.stderr, /^deployment succeeded$/m);
    });

    it('promote resolves a number to the id, posts to its promote, and follows the rollout to its end; --detach returns at once', async () => {
      const promoted = canaryDeployment({ phase: null, canary: null, status: 'succeeded' });
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment(), stableDeployment]));
      api.json('POST', `/agents/${AGENT.id}/deployments/dep_canary3/promote`, 202, canaryDeployment());
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, 200, promoted);
      api.stream(`/agents/${AGENT.id}/deployments/dep_canary3/events`, [
        ['progress', { phase: 'canary', message: 'canary serves 10%', at: '2026-01-01T09:00:20Z' }],
        ['progress', { phase: 'promoted', message: 'promoted by hand', at: '2026-01-01T10:00:00Z' }],
        ['progress', { phase: 'draining', replica_id: 'r0', message: 'draining', at: '2026-01-01T10:00:01Z' }],
        ['progress', { phase: 'succeeded', message: 'version 4 serves alone', at: '2026-01-01T10:00:05Z' }],
        ['end', { status: 'succeeded' }],
      ]);
      const result = await runWithin(user, ['deployments', 'promote', 'stub-bot', '3'], 15_000);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(api.paths('POST'), [`/agents/${AGENT.id}/deployments/dep_canary3/promote`]);
      assert.equal(api.received.find((request) => request.method === 'POST')!.body, undefined, 'no body');
      assert.match(result.stderr, /^promoted: promoted by hand$/m);
      assert.match(result.stderr, /^deployment succeeded$/m);
      assert.match(result.stdout, /^id\s+dep_canary3$/m);

      api.received.length = 0;
      const detached = await runWithin(user, ['deployments', 'promote', AGENT.id, 'dep_canary3', '--detach', '--json'], 15_000);
      assert.equal(detached.code, 0, detached.stderr);
      assert.deepEqual(api.paths('GET'), [`/agents/${AGENT.id}`], 'by id: no list read, and no stream');
      assert.equal(JSON.parse(detached.stdout).id, 'dep_canary3');
    });

    it('promote exits 1 when the promoted rollout fails', async () => {
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment()]));
      api.json('POST', `/agents/${AGENT.id}/deployments/dep_canary3/promote`, 202, canaryDeployment());
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, 200, canaryDeployment({ status: 'failed', phase: null, canary: null, error: 'out of memory' }));
      api.stream(`/agents/${AGENT.id}/deployments/dep_canary3/events`, [['end', { status: 'failed' }]]);
      const result = await runWithin(user, ['deployments', 'promote', AGENT.id, '3'], 15_000);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /deployment 3 of stub bot is failed: out of memory/);
    });

    it('abort resolves a number to the id, posts to its abort and returns once accepted', async () => {
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment(), stableDeployment]));
      api.json('POST', `/agents/${AGENT.id}/deployments/dep_canary3/abort`, 202, canaryDeployment());
      const result = await runWithin(user, ['deployments', 'abort', AGENT.id, '3', '--json'], 15_000);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(api.paths('POST'), [`/agents/${AGENT.id}/deployments/dep_canary3/abort`]);
      assert.ok(!api.paths('GET').some((path) => path.endsWith('/events')), 'abort follows nothing');
      assert.equal(JSON.parse(result.stdout).id, 'dep_canary3');
      assert.match(result.stderr, /Aborting canary deployment 3 of stub bot/);
    });

    it("passes on the API's 409 NOT_A_RUNNING_CANARY with exit 1", async () => {
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, listOf([canaryDeployment(), stableDeployment]));
      api.json('POST', `/agents/${AGENT.id}/deployments/dep_stable2/abort`, 409, { code: 'NOT_A_RUNNING_CANARY', message: 'deployment 2 is no running canary' });
      const result = await runWithin(user, ['deployments', 'abort', AGENT.id, '2'], 15_000);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^agentctl: NOT_A_RUNNING_CANARY: deployment 2 is no running canary$/m);
    });

    it("lists a serving canary's phase and both versions' figures, and get shows its strategy and preview URL", async () => {
      const list = listOf([canaryDeployment(), stableDeployment]);
      api.json('GET', `/agents/${AGENT.id}/deployments`, 200, list);
      api.json('GET', `/agents/${AGENT.id}/deployments/dep_canary3`, 200, canaryDeployment({ strategy: { ...DEFAULT_STRATEGY, auto_promote_after_seconds: 5400 } }));
      const listed = await runWithin(user, ['deployments', 'list', AGENT.id], 15_000);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /^#\s+ID\s+STATUS\s+PHASE\s+IMAGE/m);
      assert.match(listed.stdout, /^3\s+dep_canary3\s+in_progress\s+canary 10%\s+ghcr\.io\/acme\/bot:2/m);
      assert.match(listed.stdout, /^2\s+dep_stable2\s+succeeded\s+-\s+ghcr\.io\/acme\/bot:1/m);
      assert.match(listed.stdout, /^Deployment 3 \(canary 10%\) since 2026-01-01T09:00:20Z, preview http:\/\/stub-bot--d3\.agents\.localhost:$/m);
      assert.match(listed.stdout, /^VERSION\s+REQUESTS\s+ERRORS\s+ERROR RATIO\s+AVG MS\s+P95 MS$/m);
      assert.match(listed.stdout, /^stable\s+1200\s+3\s+0\.3%\s+120\s+300$/m);
      assert.match(listed.stdout, /^canary\s+130\s+0\s+0\.0%\s+110\s+250$/m);
      assert.deepEqual(JSON.parse((await runWithin(user, ['deployments', 'list', AGENT.id, '--json'], 15_000)).stdout), list, "--json is the API's JSON");

      const shown = await runWithin(user, ['deployments', 'get', AGENT.id, '3'], 15_000);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^phase\s+canary 10%$/m);
      assert.match(shown.stdout, /^strategy\s+canary 10%, 1 replica, affinity none, promoted after 1h30m, aborted above 0\.05 errors once 50 requests answered$/m);
      assert.match(shown.stdout, /^preview\s+http:\/\/stub-bot--d3\.agents\.localhost$/m);
      assert.match(shown.stdout, /^canary\s+130\s+0\s+0\.0%\s+110\s+250$/m);
      assert.ok(api.paths('GET').includes(`/agents/${AGENT.id}/deployments/dep_canary3`));
    });
  });

  /**
   * The real control API on the in-memory driver. These need the canary endpoints and
   * fields of issue 36 (POST …/deploy with `strategy`, …/promote, …/abort, the deployment's
   * `strategy`, `phase` and `canary`): before they land they fail with 422 or 404.
   */
  describe('against the control API', () => {
    let control: TestControl;
    let user: CliUser;

    before(async () => {
      control = await startControl({});
      user = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
      const registered = await user.run(['register', '--email', `canary-${Date.now()}@example.com`, '--password', 'correct horse battery', '--name', 'Canary']);
      assert.equal(registered.code, 0, registered.stderr);
    });
    after(async () => {
      await control?.close();
      if (user) rmSync(user.configHome, { recursive: true, force: true });
    });

    /** An agent whose first deployment succeeded with a replica running (the in-memory driver says so): a version a canary can run beside. */
    async function servingAgent(name: string, address: string): Promise<{ id: string; slug: string }> {
      const created = await user.json(['agents', 'create', '--name', name, '--replicas', '1', '--env', 'V=1', '--deploy']);
      const agent = { id: created.id as string, slug: new URL(created.url).hostname.split('.')[0]! };
      await runReplica(control, agent, address);
      await waitFor('the first deployment to succeed', async () => ((await deploymentNumbered(agent.id, 1)).status === 'succeeded' ? true : undefined), 15_000, 100);
      return agent;
    }

    const deploymentNumbered = (agentId: string, number: number) => user.json(['deployments', 'get', agentId, String(number)]);

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
