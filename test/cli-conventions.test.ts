import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser, ROOT, type CliResult } from './support/cli-runner.js';
import type { InMemoryDriver } from './support/in-memory-driver.js';

const ANSI = /\x1b\[/;
const SHIM = join(ROOT, 'bin', 'agentctl.js');
const { version: packageVersion } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** agentctl as CliUser runs it, with `input` on its stdin (a pipe, not a terminal). */
function runWithStdin(user: CliUser, env: Record<string, string>, args: string[], input: string): Promise<CliResult> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AGENTCTL_')));
  const child = spawn(process.execPath, [SHIM, ...args], { cwd: ROOT, env: { ...inherited, XDG_CONFIG_HOME: user.configHome, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(input);
  return new Promise((done, fail) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

const envOf = (agent: { deploy: { env: { key: string; value: string }[] } }) => agent.deploy.env.map((entry) => `${entry.key}=${entry.value}`);

/** agentctl's conventions from gh and flyctl (issue 35): versions, deploy that waits, additive env and secrets, contexts, colour. */
describe('agentctl conventions', function () {
  this.timeout(120_000);
  let control: TestControl;
  let user: CliUser;
  const env = (): Record<string, string> => ({ AGENTCTL_API_URL: control.baseUrl });
  const driver = () => control.driver as InMemoryDriver;

  before(async () => {
    control = await startControl({});
    user = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    const registered = await user.run(['register', '--email', `conventions-${Date.now()}@example.com`, '--password', 'correct horse battery', '--name', 'Conventions']);
    assert.equal(registered.code, 0, registered.stderr);
  });
  after(async () => {
    await control?.close();
    rmSync(user.configHome, { recursive: true, force: true });
  });

  describe('versions', () => {
    it('--version prints the client version from package.json without asking the API', async () => {
      const result = await user.run(['--version'], { AGENTCTL_API_URL: `http://127.0.0.1:${await closedPort()}/v1` });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout.trim(), `agentctl ${packageVersion}`);
    });

    it("`version` shows the client's and the API's version, the API's `unknown` when it cannot say", async () => {
      const shown = await user.json(['version']);
      assert.equal(shown.client.version, packageVersion);
      assert.equal(shown.api.url, control.baseUrl);
      // GET /v1/version answers once the control has it; until then the API's version is null.
      assert.ok(shown.api.version === null || typeof shown.api.version === 'string');
      const unreachable = await user.run(['version'], { AGENTCTL_API_URL: `http://127.0.0.1:${await closedPort()}/v1` });
      assert.equal(unreachable.code, 0);
      assert.match(unreachable.stdout, new RegExp(`^client\\s+${packageVersion.replace(/\./g, '\\.')}$`, 'm'));
      assert.match(unreachable.stdout, /^api\s+unknown$/m);
      assert.match(unreachable.stderr, /cannot reach/);
    });
  });

  describe('deploy', () => {
    it('follows the rollout by default and exits 0 once the deployment succeeded', async () => {
      const agent = await user.json(['agents', 'create', '--name', 'waits', '--replicas', '0']);
      const result = await user.run(['agents', 'deploy', agent.id, '--env', 'ROUND=2']);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /^deployment succeeded$/m);
      const [newest] = (await user.json(['deployments', agent.id])).deployments;
      assert.equal(newest.status, 'succeeded');
    });

    it('--detach returns once the API accepted the deploy, with the rollout still going', async () => {
      const agent = await user.json(['agents', 'create', '--name', 'detached', '--replicas', '1', '--deploy']);
      // No replica runs on the in-memory driver: a deploy that followed its rollout would not return.
      const result = await user.run(['agents', 'deploy', agent.id, '--env', 'ROUND=2', '--detach', '--json']);
      assert.equal(result.code, 0, result.stderr);
      assert.doesNotMatch(result.stderr, /deployment/);
      assert.deepEqual(envOf(JSON.parse(result.stdout)), ['ROUND=2']);
      const [newest] = (await user.json(['deployments', agent.id])).deployments;
      assert.equal(newest.status, 'in_progress');
      assert.equal((await user.run(['agents', 'deploy', agent.id, '--detach', '--wait'])).code, 2, '--detach and --wait conflict');
    });
  });

  describe('env and secrets', () => {
    let agentId: string;
    before(async () => {
      const agent = await user.json(['agents', 'create', '--name', 'configured', '--replicas', '0', '--env', 'A=1', '--env', 'B=2', '--secret', 'S=hush']);
      agentId = agent.id;
    });
    const current = async () => user.json(['agents', 'get', agentId]);
    const secretsRun = () => driver().jobOf(agentId)?.secretEnv;

    it('env set changes and adds variables, keeping the others and the secrets (their values too), as a new deployment', async () => {
      const before = (await user.json(['deployments', agentId])).total;
      const result = await user.run(['env', 'set', agentId, 'B=20', 'C=3=three']);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /^deployment succeeded$/m);
      assert.deepEqual(envOf(await current()), ['A=1', 'B=20', 'S=***', 'C=3=three']);
      assert.equal((await user.json(['deployments', agentId])).total, before + 1);
      assert.equal(secretsRun()?.S, 'hush', 'the secret kept its stored value');
    });

    it('env unset removes only the named variables; unknown names and secrets are refused, changing nothing', async () => {
      assert.equal((await user.run(['env', 'unset', agentId, 'A', '--detach'])).code, 0);
      assert.deepEqual(envOf(await current()), ['B=20', 'S=***', 'C=3=three']);
      const unknown = await user.run(['env', 'unset', agentId, 'NOPE']);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /no variable named NOPE/);
      assert.equal((await user.run(['env', 'unset', agentId, 'S'])).code, 2, 'a secret is unset with secrets unset');
      assert.equal((await user.run(['env', 'set', agentId, 'S=plain'])).code, 2, 'a secret does not become a plain variable');
      assert.deepEqual(envOf(await current()), ['B=20', 'S=***', 'C=3=three']);
      assert.deepEqual(await user.json(['env', 'list', agentId]), { env: [{ key: 'B', value: '20' }, { key: 'C', value: '3=three' }] });
    });

    it('secrets set reads a value from stdin (KEY or KEY -), keeps the other secrets, and secrets list shows names only', async () => {
      const piped = await runWithStdin(user, env(), ['secrets', 'set', agentId, 'TOKEN'], 'from stdin\n');
      assert.equal(piped.code, 0, piped.stderr);
      assert.equal(secretsRun()?.TOKEN, 'from stdin', 'one trailing newline dropped');
      assert.equal(secretsRun()?.S, 'hush');
      const dashed = await runWithStdin(user, env(), ['secrets', 'set', agentId, 'S', '-', 'OTHER=inline'], 'new hush');
      assert.equal(dashed.code, 0, dashed.stderr);
      assert.deepEqual({ ...secretsRun() }, { S: 'new hush', TOKEN: 'from stdin', OTHER: 'inline' });
      const listed = await user.run(['secrets', 'list', agentId]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(listed.stdout.trim().split('\n').map((line) => line.trim()), ['NAME', 'S', 'TOKEN', 'OTHER']);
      assert.deepEqual(await user.json(['secrets', 'list', agentId]), { secrets: [{ key: 'S' }, { key: 'TOKEN' }, { key: 'OTHER' }] });
      assert.doesNotMatch(JSON.stringify(await current()), /new hush|from stdin/);
    });

    it('secrets set --from-file and secrets unset; a plain variable may become a secret', async () => {
      const file = join(user.configHome, 'cert.pem');
      writeFileSync(file, '-----BEGIN-----\nabc\n');
      assert.equal((await user.run(['secrets', 'set', agentId, '--from-file', `CERT=${file}`, 'C=secret-now'])).code, 0);
      assert.equal(secretsRun()?.CERT, '-----BEGIN-----\nabc');
      assert.equal(secretsRun()?.C, 'secret-now');
      assert.equal((await user.run(['secrets', 'unset', agentId, 'TOKEN', 'OTHER'])).code, 0);
      assert.deepEqual(envOf(await current()), ['B=20', 'S=***', 'C=***', 'CERT=***']);
      assert.equal(secretsRun()?.S, 'new hush');
      assert.equal((await user.run(['secrets', 'set', agentId])).code, 2, 'nothing to set');
      assert.equal((await runWithStdin(user, env(), ['secrets', 'set', agentId, 'X', 'Y'], 'v')).code, 2, 'one value from stdin only');
    });
  });

  describe('contexts', () => {
    it('adds, lists (the one in use marked) and uses contexts; --context and AGENTCTL_CONTEXT pick one per command', async () => {
      const own = new CliUser({});
      try {
        const grant = await control.signUp();
        const unreachable = `http://127.0.0.1:${await closedPort()}/v1`;
        assert.equal((await runWithStdin(own, {}, ['context', 'add', 'local', '--api-url', control.baseUrl, '--token-stdin'], `${grant.token}\n`)).code, 0);
        assert.equal((await own.run(['context', 'add', 'elsewhere', '--api-url', unreachable])).code, 0);
        assert.equal((await own.json(['whoami'])).email, grant.user.email, 'the first context added is in use');
        const listed = await own.run(['context', 'list']);
        assert.match(listed.stdout, /^\*\s+local\s/m);
        assert.match(listed.stdout, /^\s+elsewhere\s/m);

        assert.equal((await own.run(['whoami', '--context', 'elsewhere'])).code, 3);
        assert.equal((await own.run(['whoami'], { AGENTCTL_CONTEXT: 'elsewhere' })).code, 3);
        assert.equal((await own.run(['whoami', '--context', 'nowhere'])).code, 2);
        assert.equal((await own.run(['context', 'use', 'elsewhere'])).code, 0);
        assert.equal((await own.json(['context', 'list'])).current, 'elsewhere');
        assert.equal((await own.run(['whoami'])).code, 3);
        assert.equal((await own.json(['whoami'], { AGENTCTL_CONTEXT: 'local' })).email, grant.user.email);
        assert.equal((await own.run(['context', 'use', 'nowhere'])).code, 2);
      } finally {
        rmSync(own.configHome, { recursive: true, force: true });
      }
    });

    it('reads the single-target file of earlier versions as the context `default`, and login fills the context in use', async () => {
      const legacy = new CliUser({});
      try {
        const grant = await control.signUp();
        mkdirSync(dirname(legacy.configPath), { recursive: true });
        writeFileSync(legacy.configPath, JSON.stringify({ api_url: control.baseUrl, token: grant.token, email: grant.user.email }));
        assert.equal((await legacy.json(['whoami'])).email, grant.user.email);
        const listed = await legacy.json(['context', 'list']);
        assert.deepEqual(listed, { current: 'default', contexts: [{ name: 'default', current: true, api_url: control.baseUrl, user: grant.user.email, signed_in: true }] });

        assert.equal((await legacy.run(['context', 'add', 'second', '--api-url', control.baseUrl])).code, 0);
        assert.equal((await legacy.run(['login', '--context', 'second', '--email', grant.user.email, '--password', grant.password])).code, 0);
        assert.equal((await legacy.json(['whoami', '--context', 'second'])).email, grant.user.email);
        assert.equal((await legacy.run(['logout', '--context', 'second'])).code, 0);
        assert.equal((await legacy.run(['whoami', '--context', 'second'])).code, 1, 'signed out of second');
        assert.equal((await legacy.json(['whoami'])).email, grant.user.email, 'default kept its session');
        assert.deepEqual((await legacy.json(['context', 'list'])).contexts.map((c: { name: string }) => c.name), ['default', 'second']);
      } finally {
        rmSync(legacy.configHome, { recursive: true, force: true });
      }
    });
  });

  describe('help and completion', () => {
    /** Every runnable command's words (`agents deploy`), from the help of the top level and of each group. */
    async function commandPaths(prefix: string[] = []): Promise<string[][]> {
      const help = (await user.run([...prefix, '--help'])).stdout;
      const section = help.split(/^Commands:$/m)[1]?.split(/^\S.*:$/m)[0] ?? '';
      const paths: string[][] = [];
      for (const match of section.matchAll(/^ {2}agentctl (.+?)(?: {2,}|$)/gm)) {
        const words = match[1]!.split(' ').filter((word) => !/^[<[]/.test(word));
        if (match[1]!.includes('<command>')) paths.push(...(await commandPaths(words)));
        else paths.push(words);
      }
      return paths;
    }

    it('shows examples in every command\'s help, describes every flag and positional, and lists the choices of --level', async () => {
      const paths = await commandPaths();
      assert.ok(paths.length > 30, `${paths.length} commands found`);
      for (const path of paths) {
        const help = await user.run([...path, '--help']);
        assert.equal(help.code, 0, path.join(' '));
        if (path[0] !== 'completion') assert.match(help.stdout, /^Examples:$/m, `examples in agentctl ${path.join(' ')} --help`);
        const undescribed = help.stdout.split('\n').filter((line) => /^\s+(?:-\w, )?(?:--)?[\w-]+\s+\[(?:string|number|boolean|array)\]/.test(line));
        assert.deepEqual(undescribed, [], `undescribed in agentctl ${path.join(' ')}`);
      }
      assert.match((await user.run(['agents', 'logs', '--help'])).stdout, /--level .*\[choices: "debug", "info", "warn", "error"\]/);
    });

    it('prints completion scripts for bash, zsh and fish', async () => {
      assert.match((await user.run(['completion', 'bash'])).stdout, /complete -o bashdefault -o default -F _agentctl_yargs_completions agentctl/);
      assert.match((await user.run(['completion', 'zsh'])).stdout, /^#compdef agentctl$/m);
      assert.match((await user.run(['completion'], { SHELL: '/usr/bin/zsh' })).stdout, /^#compdef agentctl$/m, '$SHELL picks when none is named');
      const fish = await user.run(['completion', 'fish']);
      assert.match(fish.stdout, /^complete -f -c agentctl -a '\(env SHELL=fish agentctl --get-yargs-completions/m);
      assert.equal((await user.run(['completion', 'tcsh'])).code, 2);
      const offered = await user.run(['--get-yargs-completions', 'secrets', ''], { SHELL: '/usr/bin/fish' });
      assert.match(offered.stdout, /^set\t/m, 'fish gets names with their descriptions');
    });
  });

  describe('noun then verb, with the old top-level commands as aliases', () => {
    /** The new form of each command that was at the top level, by its old form; a group's default runs for deployments, audit and usage. */
    const RENAMED: [string[], string[]][] = [
      [['register'], ['auth', 'register']],
      [['login'], ['auth', 'login']],
      [['logout'], ['auth', 'logout']],
      [['whoami'], ['auth', 'whoami']],
      [['logs'], ['agents', 'logs']],
      [['metrics'], ['agents', 'metrics']],
      [['invoke'], ['agents', 'invoke']],
      [['rollback'], ['deployments', 'rollback']],
    ];
    /** A command's help from its positionals on: what it takes and its examples, without its usage line and description. */
    const takes = (help: string) => help.slice(help.search(/^(Positionals|Options):$/m));
    let agentId: string;
    before(async () => {
      agentId = (await user.json(['agents', 'create', '--name', 'layout', '--env', 'V=1', '--replicas', '0', '--deploy'])).id;
      assert.equal((await user.run(['agents', 'deploy', agentId, '--env', 'V=2'])).code, 0);
    });

    it('lists only the groups, version and completion in the top-level help and in completion', async () => {
      const help = (await user.run(['--help'])).stdout;
      const commands = help.split(/^Commands:$/m)[1]!.split(/^\S.*:$/m)[0]!;
      const listed = [...commands.matchAll(/^ {2}agentctl (\S+)( \S+)?/gm)].map(([, name, rest]) => `${name}${rest ?? ''}`);
      const groups = ['auth', 'agents', 'deployments', 'env', 'secrets', 'keys', 'api-keys', 'domains', 'sessions', 'invocations', 'usage', 'audit', 'team', 'accounts', 'context'];
      assert.deepEqual(listed.sort(), [...groups.map((group) => `${group} <command>`), 'version', 'completion [shell]'].sort());
      const offered = (await user.run(['--get-yargs-completions', ''], { SHELL: '/bin/bash' })).stdout.trim().split('\n');
      assert.deepEqual(offered.sort(), [...groups, 'version', 'completion'].sort());
    });

    it('gives each old top-level command the flags and examples of its new form, and names the new form in its help', async () => {
      for (const [old, renamed] of RENAMED) {
        const [oldHelp, newHelp] = await Promise.all([user.run([...old, '--help']), user.run([...renamed, '--help'])]);
        assert.equal(oldHelp.code, 0, old.join(' '));
        assert.equal(takes(oldHelp.stdout), takes(newHelp.stdout), `${old.join(' ')} takes what ${renamed.join(' ')} takes`);
        assert.match(oldHelp.stdout, new RegExp(`An alias of \`agentctl ${renamed.join(' ')}\``));
      }
    });

    it('signs up, in and out with auth register|login|logout|whoami', async () => {
      const own = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
      try {
        const email = `layout-${Date.now()}@example.com`;
        const registered = await own.run(['auth', 'register', '--email', email, '--password', 'correct horse battery', '--name', 'Layout']);
        assert.equal(registered.code, 0, registered.stderr);
        assert.equal((await own.json(['auth', 'whoami'])).email, email);
        assert.deepEqual(await own.json(['whoami']), await own.json(['auth', 'whoami']));
        assert.equal((await own.run(['auth', 'logout'])).code, 0);
        assert.equal((await own.run(['auth', 'whoami'])).code, 1, 'signed out');
        assert.equal((await own.json(['auth', 'login', '--email', email, '--password', 'correct horse battery'])).user.email, email);
        assert.equal((await own.run(['auth', 'login', '--email', email])).code, 2, 'no password and no terminal, as login');
      } finally {
        rmSync(own.configHome, { recursive: true, force: true });
      }
    });

    it('lists deployments as deployments list <agent> and, as before, deployments <agent>, with the same flags', async () => {
      const listed = await user.json(['deployments', 'list', agentId]);
      assert.deepEqual(listed.deployments.map((d: { number: number }) => d.number), [2, 1]);
      assert.deepEqual(await user.json(['deployments', agentId]), listed);
      assert.deepEqual(await user.json(['deployments', agentId, '--page-size', '1']), await user.json(['deployments', 'list', agentId, '--page-size', '1']));
      // .strict() still holds for the group's default: an unknown flag, a word too many or no agent is bad usage.
      assert.equal((await user.run(['deployments', agentId, '--bogus'])).code, 2);
      assert.equal((await user.run(['deployments', agentId, 'extra'])).code, 2);
      assert.equal((await user.run(['deployments'])).code, 2);
      assert.equal((await user.run(['deployments', 'list'])).code, 2);
    });

    it('rolls back as deployments rollback and, as before, rollback', async () => {
      const first = await user.json(['deployments', 'rollback', agentId, '1']);
      assert.equal(first.deploy.env[0].value, '1');
      const second = await user.json(['rollback', agentId, '2']);
      assert.equal(second.deploy.env[0].value, '2');
      const [newest] = (await user.json(['deployments', 'list', agentId])).deployments;
      assert.equal(newest.number, 4);
      assert.equal((await user.run(['deployments', 'rollback', agentId, '99'])).code, 1);
      assert.equal((await user.run(['rollback', agentId, '99'])).code, 1);
    });

    it('shows the audit log as audit list and, as before, audit, with the same filters', async () => {
      const filters = ['--action', 'agent.create', '--agent', agentId];
      const listed = await user.json(['audit', 'list', ...filters]);
      assert.deepEqual(listed.events.map((e: { action: string; target: { id: string } }) => [e.action, e.target.id]), [['agent.create', agentId]]);
      assert.deepEqual(await user.json(['audit', ...filters]), listed);
      assert.equal((await user.run(['audit', 'list', '--action', 'agent.explode'])).code, 1);
      assert.equal((await user.run(['audit', 'bogus'])).code, 2);
    });

    it('shows usage as usage show and, as before, usage', async () => {
      const shown = await user.json(['usage', 'show']);
      const before = await user.json(['usage']);
      assert.deepEqual({ plan: before.plan, limits: before.limits }, { plan: shown.plan, limits: shown.limits });
      assert.match((await user.run(['usage', 'show'])).stdout, /agents\s+\d+\s+\d+/);
      assert.match((await user.run(['usage'])).stdout, /agents\s+\d+\s+\d+/);
      assert.equal((await user.run(['usage', 'show', 'extra'])).code, 2);
    });

    it('reads logs and metrics and invokes as agents logs|metrics|invoke and, as before, at the top level', async () => {
      // The in-memory driver runs no replica: no logs, a sample of zeros, and no agent by that name to invoke.
      const logs = await user.json(['agents', 'logs', agentId, '--level', 'warn']);
      assert.deepEqual(logs.logs, []);
      assert.deepEqual(await user.json(['logs', agentId, '--level', 'warn']), logs);
      assert.equal((await user.run(['agents', 'logs', agentId, '--level', 'loud'])).code, 2);
      assert.equal((await user.run(['logs', agentId, '--level', 'loud'])).code, 2);
      const sample = await user.json(['agents', 'metrics', agentId]);
      assert.deepEqual(Object.keys(await user.json(['metrics', agentId])).sort(), Object.keys(sample).sort());
      for (const invoke of [['agents', 'invoke'], ['invoke']]) {
        const unknown = await user.run([...invoke, 'nobody-here', 'hello']);
        assert.equal(unknown.code, 1, invoke.join(' '));
        assert.match(unknown.stderr, /NOT_FOUND/);
        assert.equal((await user.run([...invoke, agentId])).code, 2, 'no input');
      }
    });
  });

  describe('colour', () => {
    before(async () => {
      await user.json(['agents', 'create', '--name', 'colourful']);
    });

    it('has no ANSI escapes off a terminal, with NO_COLOR or with --no-color; has them when colour is forced', async () => {
      const plain = await user.run(['agents', 'list']);
      assert.equal(plain.code, 0, plain.stderr);
      assert.match(plain.stdout, /colourful/);
      assert.doesNotMatch(plain.stdout, ANSI);
      const forced = await user.run(['agents', 'list'], { FORCE_COLOR: '1' });
      assert.match(forced.stdout, ANSI);
      assert.match(forced.stdout, /\x1b\[1mID/);
      assert.doesNotMatch((await user.run(['agents', 'list'], { FORCE_COLOR: '1', NO_COLOR: '1' })).stdout, ANSI);
      assert.doesNotMatch((await user.run(['agents', 'list', '--no-color'], { FORCE_COLOR: '1' })).stdout, ANSI);
    });
  });
});
