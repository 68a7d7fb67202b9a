import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { authFileContent } from '../control/orchestrator/podman/registry-auth-file.js';
import { parseImagesCommand, UsageError } from '../scripts/lib/images/command.js';
import { nomadVariables, releaseTag } from '../scripts/lib/images/release.js';
import { podman } from './support/podman.js';
import { startRegistry, type TestRegistry } from './support/registry.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';

const ROOT = resolve(import.meta.dirname, '..');

/** `npm run images -- <args>` as the operator runs it: exit code and both outputs. */
function images(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/images.ts'), ...args], { cwd: ROOT, timeout: 240_000 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

/**
 * `npm run images` (scripts/images.ts): its arguments and tag, then a push to a real registry
 * (docker-registry on loopback, htpasswd, TLS from the test's CA) whose printed digests a
 * pull by digest finds. The push takes --skip-build with the test image tagged as both
 * images: building the platform image takes minutes, and the digests printed are the
 * registry's all the same.
 */
describe('npm run images', function () {
  this.timeout(300_000);

  describe('arguments', () => {
    const usage = (argv: string[], message: RegExp) => assert.throws(() => parseImagesCommand(argv), (error: unknown) => error instanceof UsageError && message.test(error.message));

    it('reads build and push with their options', () => {
      assert.deepEqual(parseImagesCommand(['build']), { kind: 'build', tag: null });
      assert.deepEqual(parseImagesCommand([]), { kind: 'help' });
      assert.deepEqual(parseImagesCommand(['push', 'registry.example.com:5000/team/sub/', '--tag', '1.4.0-3f2c1ab', '--authfile', '/a.json', '--tls-verify=false', '--cert-dir', '/certs']), {
        kind: 'push',
        target: { registry: 'registry.example.com:5000', namespace: 'team/sub' },
        tag: '1.4.0-3f2c1ab',
        skipBuild: false,
        podmanArgs: ['--authfile', '/a.json', '--tls-verify=false', '--cert-dir', '/certs'],
      });
      assert.deepEqual(parseImagesCommand(['push', 'localhost:5000/p', '--skip-build', '--creds', 'u:p']), {
        kind: 'push', target: { registry: 'localhost:5000', namespace: 'p' }, tag: null, skipBuild: true, podmanArgs: ['--creds', 'u:p'],
      });
    });

    it('refuses what would push somewhere unintended or under a mutable tag, saying why', () => {
      usage(['push', 'team/images'], /start with the registry's host/);
      usage(['push', 'registry.example.com'], /name a namespace/);
      usage(['push', 'registry.example.com/Team'], /"Team" is not a repository path component/);
      usage(['push'], /push takes one <registry>\/<namespace>/);
      usage(['build', '--tag', 'latest'], /never "latest"/);
      usage(['build', '--authfile', 'x'], /build takes only --tag/);
      usage(['push', 'r.example.com/p', '--tls-verify=maybe'], /--tls-verify takes true or false/);
      usage(['push', 'r.example.com/p', '--authfile', 'a', '--creds', 'u:p'], /not both/);
      usage(['deploy'], /unknown command "deploy"/);
      usage(['build', '--no-such-flag'], /Unknown option '--no-such-flag'/);
    });

    it('tags with the version and the short commit, -dirty for a changed work tree', () => {
      const commit = '3f2c1ab9d00e4e1c0b9f6a0e2d9d1c7b5a4f3e21';
      assert.equal(releaseTag({ version: '1.4.0', commit, dirty: false }), '1.4.0-3f2c1ab');
      assert.equal(releaseTag({ version: '1.4.0', commit, dirty: true }), '1.4.0-3f2c1ab-dirty');
      assert.equal(nomadVariables('r/p@sha256:1', 'r/r@sha256:2'), '-var image=r/p@sha256:1 -var runtime_image=r/r@sha256:2');
    });
  });

  describe('push to a registry', () => {
    let registry: TestRegistry;
    let dir: string;
    let authFile: string;
    const tag = `test-${randomBytes(4).toString('hex')}`;
    const locals = [`localhost/agent-platform:${tag}`, `localhost/agent-runtime:${tag}`];
    const pushed: string[] = [];

    before(async () => {
      ensureTestImage('runc');
      registry = await startRegistry();
      dir = mkdtempSync(join(tmpdir(), 'images-script-'));
      authFile = join(dir, 'auth.json');
      writeFileSync(authFile, authFileContent({ registry: registry.host, username: registry.username, password: registry.password }), { mode: 0o600 });
    });
    after(async () => {
      for (const reference of [...locals, ...pushed]) {
        try {
          podman(['rmi', '--force', reference]);
        } catch {
          // already gone
        }
      }
      await registry?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('with --skip-build, refuses when the images were not built, naming them', async () => {
      const run = await images(['push', `${registry.host}/platform`, '--skip-build', '--tag', tag, '--authfile', authFile, '--cert-dir', registry.certDir]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, new RegExp(`--skip-build: localhost/agent-platform:${tag} and localhost/agent-runtime:${tag} not on this host`));
    });

    it('prints both images by the digest the registry holds, and the Nomad variables; a pull by digest finds each', async () => {
      // Two different images, so the two digests must differ: the runtime one gets a label more.
      podman(['tag', TEST_IMAGE, locals[0]!]);
      podman(['build', '--quiet', '--pull=never', '--label', 'test=runtime', '--tag', locals[1]!, '--file', writeContainerfile(dir, `FROM ${TEST_IMAGE}\n`), dir]);

      const run = await images(['push', `${registry.host}/platform`, '--skip-build', '--tag', tag, '--authfile', authFile, '--cert-dir', registry.certDir]);
      assert.equal(run.code, 0, run.stderr);
      const platform = new RegExp(`^agent-platform +(${registry.host}/platform/agent-platform@sha256:[a-f0-9]{64})$`, 'm').exec(run.stdout)?.[1];
      const runtime = new RegExp(`^agent-runtime +(${registry.host}/platform/agent-runtime@sha256:[a-f0-9]{64})$`, 'm').exec(run.stdout)?.[1];
      assert.ok(platform && runtime, run.stdout);
      assert.notEqual(platform.split('@')[1], runtime.split('@')[1]);
      assert.ok(run.stdout.includes(`-var image=${platform} -var runtime_image=${runtime}`), run.stdout);
      assert.ok(!run.stdout.includes(registry.password) && !run.stderr.includes(registry.password));
      pushed.push(`${registry.host}/platform/agent-platform:${tag}`, `${registry.host}/platform/agent-runtime:${tag}`, platform, runtime);

      for (const reference of [platform, runtime]) {
        const id = podman(['pull', '--quiet', '--authfile', authFile, '--cert-dir', registry.certDir, reference]).trim();
        assert.match(id, /^[a-f0-9]{64}$/, `${reference} pulled by digest`);
      }
      const unknown = `${registry.host}/platform/agent-runtime@sha256:${'0'.repeat(64)}`;
      assert.throws(() => podman(['pull', '--quiet', '--authfile', authFile, '--cert-dir', registry.certDir, unknown]), /manifest unknown|not found/i, 'a digest the registry does not hold is not found');
    });
  });
});

function writeContainerfile(dir: string, content: string): string {
  const path = join(dir, 'Containerfile');
  writeFileSync(path, content);
  return path;
}
