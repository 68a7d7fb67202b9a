import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TEST_IMAGE = 'localhost/platform-test-busybox:1';

/**
 * A tiny image for orchestration tests, made from the host's static busybox (no registry
 * needed). Its entry point picks a behaviour from $MODE: `serve` (default: busybox httpd
 * on 8080 with /health and a CGI that prints the environment), `exit` (exits at once),
 * `silent` (runs but never listens).
 */
const ENTRY = `#!/bin/sh
case "$MODE" in
  exit) echo "exiting at once" >&2; exit 3 ;;
  silent) echo "running without listening"; exec sleep 1000000 ;;
  *) echo '{"level":"warn","msg":"serving on 8080"}'; echo "booting" >&2; exec httpd -f -p "\${PORT:-8080}" -h /www ;;
esac
`;

const ENV_CGI = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
env
`;

const APPLETS = ['sh', 'httpd', 'sleep', 'echo', 'env', 'printf', 'wget', 'nc', 'cat', 'ps', 'grep', 'wc', 'seq', 'kill', 'id'];

export function ensureTestImage(runtime: string | null): void {
  const podman = (args: string[]) => execFileSync('podman', [...(runtime ? ['--runtime', runtime] : []), ...args], { stdio: 'pipe' });
  try {
    podman(['image', 'exists', TEST_IMAGE]);
    return;
  } catch {
    // not built yet
  }
  if (!existsSync('/bin/busybox')) throw new Error('busybox-static is missing: apt-get install -y busybox-static (scripts/ensure-deps.sh --containers)');
  const root = mkdtempSync(join(tmpdir(), 'test-image-'));
  try {
    for (const dir of ['bin', 'etc', 'tmp', 'www/cgi-bin', 'app']) mkdirSync(join(root, dir), { recursive: true });
    execFileSync('cp', ['/bin/busybox', join(root, 'bin/busybox')]);
    for (const applet of APPLETS) symlinkSync('busybox', join(root, 'bin', applet));
    writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0::/:/bin/sh\nagent:x:1000:1000::/tmp:/bin/sh\n');
    writeFileSync(join(root, 'etc/group'), 'root:x:0:\nagent:x:1000:\n');
    writeFileSync(join(root, 'www/health'), 'ok\n');
    writeFileSync(join(root, 'www/cgi-bin/env'), ENV_CGI);
    writeFileSync(join(root, 'app/entry.sh'), ENTRY);
    chmodSync(join(root, 'www/cgi-bin/env'), 0o755);
    chmodSync(join(root, 'app/entry.sh'), 0o755);
    chmodSync(join(root, 'tmp'), 0o1777);
    const tar = join(root, '..', `${root.split('/').pop()}.tar`);
    execFileSync('tar', ['-C', root, '-cf', tar, '.']);
    podman(['import', '--change', 'ENV PATH=/bin', '--change', 'USER 1000:1000', '--change', 'CMD ["/app/entry.sh"]', '--change', 'WORKDIR /tmp', tar, TEST_IMAGE]);
    rmSync(tar, { force: true });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
