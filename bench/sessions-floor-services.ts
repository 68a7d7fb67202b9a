import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeAgentServices } from '../runtime-image/test/helpers/fake-agent-services.js';

/**
 * The floor under bench/sessions.bench.ts: Sessions API v1 kept in a Map behind a bare
 * node:http server, in a process of its own on the control API's CPU. No Koa, no token
 * crypto, no Postgres, no Redis: what any store behind agent services would add at least,
 * since the runtime still makes its two calls over HTTP per invoke. On stdout, one JSON line
 * saying where it listens and where its token is; it stops when its stdin closes.
 */
async function main(): Promise<void> {
  const token = randomBytes(24).toString('base64url');
  const services = await FakeAgentServices.start([token]);
  const dir = mkdtempSync(join(tmpdir(), 'sessions-floor-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, token);
  // The fake keeps every request for tests to read back; a bench only needs the answers.
  const forget = setInterval(() => services.requests.splice(0), 1_000);
  process.stdin.resume();
  process.stdin.on('end', () => {
    clearInterval(forget);
    rmSync(dir, { recursive: true, force: true });
    void services.close().then(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ agentServicesUrl: services.url, tokenFile })}\n`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
