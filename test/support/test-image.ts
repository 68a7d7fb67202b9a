import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TEST_IMAGE = 'localhost/platform-test-busybox:3';

/**
 * A tiny image for orchestration tests, made from the host's static busybox (no registry
 * needed). Its entry point picks a behaviour from $MODE: `serve` (default: busybox httpd
 * on 8080 with /health and a CGI that prints the environment), `exit` (exits at once),
 * `silent` (runs but never listens), `agent` (runtime contract v1's /health and /invoke, below:
 * for tests that call an agent as a user does, e.g. `agentctl invoke`).
 */
const ENTRY = `#!/bin/sh
case "$MODE" in
  exit) echo "exiting at once" >&2; exit 3 ;;
  silent) echo "running without listening"; exec sleep 1000000 ;;
  agent) echo '{"level":"warn","msg":"agent serving on 8080"}'; exec nc -ll -p "\${PORT:-8080}" -e /app/agent.sh ;;
  *) echo '{"level":"warn","msg":"serving on 8080"}'; echo "booting" >&2; exec httpd -f -p "\${PORT:-8080}" -h /www ;;
esac
`;

const ENV_CGI = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
env
`;

/**
 * MODE=agent: one HTTP exchange on stdin/stdout (busybox `nc -ll -e` runs it per connection;
 * httpd cannot, as it runs CGI only under /cgi-bin/). GET /health, and POST /invoke answering
 * "echo: <input>"; with Accept: text/event-stream the runtime's stream instead
 * (runtime-image/README.md, "Streaming"): a delta per word, then done. Each call is logged
 * on stderr (nc leaves stderr to the container) as an info line, so a test sees a new line.
 * For canary tests (issue 36): with $AGENT_VERSION_LABEL set, every answer carries it as
 * `X-Agent-Version`, so a caller sees which version answered; $FAIL_PERCENT (0-100, default
 * 0) is the chance that a POST /invoke answers 500 instead (each connection is a new shell,
 * so ash's $RANDOM is drawn afresh).
 */
const AGENT = `#!/bin/sh
cr=$(printf '\\r')
read -r method path _
length=0
stream=
while read -r line; do
  line=\${line%"$cr"}
  [ -z "$line" ] && break
  case "$line" in
    [Cc]ontent-[Ll]ength:*) length=\${line#*:}; length=\${length# } ;;
    [Aa]ccept:*text/event-stream*) stream=1 ;;
  esac
done
body=
[ "$length" -gt 0 ] && body=$(head -c "$length")
input=$(printf '%s' "$body" | sed -n 's/.*"input":"\\([^"]*\\)".*/\\1/p')
session=$(printf '%s' "$body" | sed -n 's/.*"session_id":"\\([^"]*\\)".*/\\1/p')
[ -n "$session" ] || session=ses-echo
# The status line and Content-Type, then X-Agent-Version when a label is set.
start_answer() {
  printf 'HTTP/1.1 %s\\r\\nContent-Type: %s\\r\\n' "$1" "$2"
  [ -z "$AGENT_VERSION_LABEL" ] || printf 'X-Agent-Version: %s\\r\\n' "$AGENT_VERSION_LABEL"
}
reply() { start_answer "$1" application/json; printf 'Content-Length: %s\\r\\nConnection: close\\r\\n\\r\\n%s' "\${#2}" "$2"; }
case "$method $path" in
  "GET /health") reply '200 OK' '{"status":"ok","contract":"v1"}' ;;
  "POST /invoke")
    printf '{"level":"info","msg":"invoked: %s"}\\n' "$input" >&2
    if [ "$((RANDOM % 100))" -lt "\${FAIL_PERCENT:-0}" ]; then
      reply '500 Internal Server Error' '{"error":{"code":"INJECTED_FAILURE","message":"FAIL_PERCENT"}}'
    elif [ -n "$stream" ]; then
      start_answer '200 OK' text/event-stream
      printf 'Connection: close\\r\\n\\r\\n'
      for word in echo: $input; do printf 'event: delta\\ndata: {"text":"%s "}\\n\\n' "$word"; done
      printf 'event: done\\ndata: {"output":"echo: %s","session_id":"%s","agent_id":"%s"}\\n\\n' "$input" "$session" "$AGENT_ID"
    else
      reply '200 OK' "{\\"output\\":\\"echo: $input\\",\\"session_id\\":\\"$session\\",\\"agent_id\\":\\"$AGENT_ID\\"}"
    fi ;;
  *) reply '404 Not Found' '{"error":{"code":"NOT_FOUND","message":"no such path"}}' ;;
esac
`;

const APPLETS = ['sh', 'httpd', 'sleep', 'echo', 'env', 'printf', 'wget', 'nc', 'cat', 'ps', 'grep', 'wc', 'seq', 'kill', 'id', 'head', 'sed'];

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
    writeFileSync(join(root, 'app/agent.sh'), AGENT);
    chmodSync(join(root, 'www/cgi-bin/env'), 0o755);
    chmodSync(join(root, 'app/entry.sh'), 0o755);
    chmodSync(join(root, 'app/agent.sh'), 0o755);
    chmodSync(join(root, 'tmp'), 0o1777);
    const tar = join(root, '..', `${root.split('/').pop()}.tar`);
    execFileSync('tar', ['-C', root, '-cf', tar, '.']);
    podman(['import', '--change', 'ENV PATH=/bin', '--change', 'USER 1000:1000', '--change', 'CMD ["/app/entry.sh"]', '--change', 'WORKDIR /tmp', tar, TEST_IMAGE]);
    rmSync(tar, { force: true });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
