import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { freePort, startPostgres, startRedis } from '../scripts/lib/local-services.js';
import { ensureTestImage, TEST_IMAGE } from '../test/support/test-image.js';
import { controlApiClient } from './api-client.js';
import { summarise, writeResult } from './stats.js';

/**
 * Orchestration on real podman, through a real control API process (node control/main.ts):
 * create → running and 0 → 3 scale-up times (p50 over 10 runs), then the control API's
 * memory (RSS) while it supervises 50 running replicas of a small image on an exempt account.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const REPLICAS_FOR_MEMORY = Number(process.env.BENCH_REPLICAS ?? 50);
const root = resolve(import.meta.dirname, '..');

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'platform-bench-orch-'));
  chmodSync(workDir, 0o755);
  const postgres = await startPostgres({ dataDir: join(workDir, 'pg'), port: await freePort(), database: 'bench' });
  const redis = await startRedis({ dataDir: join(workDir, 'redis'), port: await freePort(), persistent: false });
  ensureTestImage('runc');
  const port = await freePort();
  const instance = `bench-${randomBytes(3).toString('hex')}`;
  const control = spawn(process.execPath, ['--import', 'tsx', join(root, 'control/main.ts')], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      MASTER_KEY: randomBytes(32).toString('base64'),
      CONTROL_PORT: String(port),
      // Any free port: the default 7072 may be taken by another control API on this host.
      CONTROL_METRICS_PORT: '0',
      // Off: the default 7090 may be taken too.
      AGENT_SERVICES_PORT: '0',
      PODMAN_INSTANCE: instance,
      RUNTIME_IMAGE: TEST_IMAGE,
      LOG_LEVEL: 'warn',
      TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
    },
  });
  const base = `http://127.0.0.1:${port}/v1`;
  const call = controlApiClient(base);
  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await check().catch(() => false)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  try {
    await until('the control API', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60_000);
    const { token, user } = await call('POST', '/auth/register', undefined, { email: 'bench@example.com', password: 'bench password', name: 'Bench' });
    const db = new pg.Client({ connectionString: postgres.url });
    await db.connect();
    await db.query('UPDATE accounts SET exempt = true WHERE id = $1', [user.account_id]);
    await db.end();
    const small = { resources: { cpu: 0.1, memory_mb: 64 } };

    console.log(`create → running, ${RUNS} runs`);
    const createToRunning: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      const agent = await call('POST', '/agents', token, { name: `c${i}`, access: 'public', deploy: { replicas: 1, ...small } });
      await until('running', async () => (await call('GET', `/agents/${agent.id}`, token)).status === 'running');
      createToRunning.push(performance.now() - started);
      await call('DELETE', `/agents/${agent.id}`, token);
    }

    console.log(`scale 0 → 3, ${RUNS} runs`);
    const scaleUp: number[] = [];
    const scaled = await call('POST', '/agents', token, { name: 'scaled', access: 'public', deploy: { replicas: 0, ...small } });
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      await call('POST', `/agents/${scaled.id}/scale`, token, { direction: 'up', count: 3 });
      await until('3 replicas', async () => {
        const agent = await call('GET', `/agents/${scaled.id}`, token);
        return agent.status === 'running' && agent.replicas === 3;
      });
      scaleUp.push(performance.now() - started);
      await call('POST', `/agents/${scaled.id}/scale`, token, { direction: 'down', count: 3 });
      await until('stopped', async () => (await call('GET', `/agents/${scaled.id}`, token)).status === 'stopped');
    }
    await call('DELETE', `/agents/${scaled.id}`, token);

    console.log(`${REPLICAS_FOR_MEMORY} running replicas`);
    const rssIdle = rssOf(control.pid!);
    const agents = [];
    for (let i = 0; i < REPLICAS_FOR_MEMORY / 5; i++) {
      agents.push(await call('POST', '/agents', token, { name: `m${i}`, access: 'public', deploy: { replicas: 5, max_replicas: 5, ...small } }));
    }
    await until(`${REPLICAS_FOR_MEMORY} running replicas`, async () => {
      const usage = await call('GET', '/account/usage', token);
      return usage.usage.replicas === REPLICAS_FOR_MEMORY;
    }, 600_000);
    await new Promise((r) => setTimeout(r, 10_000)); // a few supervision ticks with everything running
    const rssLoaded = rssOf(control.pid!);
    for (const agent of agents) await call('DELETE', `/agents/${agent.id}`, token);

    const result = {
      benchmark: 'orchestration-podman',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      image: TEST_IMAGE,
      create_to_running: summarise(createToRunning),
      scale_0_to_3: summarise(scaleUp),
      control_api_rss_mb: { idle: rssIdle, with_running_replicas: rssLoaded, replicas: REPLICAS_FOR_MEMORY },
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${writeResult('orchestration', result)}`);
  } finally {
    control.kill('SIGTERM');
    await new Promise((r) => control.once('exit', r));
    const { execFileSync } = await import('node:child_process');
    const leftovers = execFileSync('podman', ['ps', '-aq', '--filter', `label=platform.instance=${instance}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
    if (leftovers.length) execFileSync('podman', ['rm', '-f', '-t', '0', ...leftovers]);
    const networks = execFileSync('podman', ['network', 'ls', '-q', '--filter', `label=platform.instance=${instance}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
    if (networks.length) execFileSync('podman', ['network', 'rm', '-f', ...networks]);
    await redis.stop();
    await postgres.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
