import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { systemClock } from '../contract/clock.js';
import { podmanRuntime } from '../control/orchestrator/podman/host.js';
import { Autoscaler } from '../control/services/autoscaler.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { startTestAuthz, type TestAuthz } from './support/edge-authz.js';
import { createRunningAgent } from './support/orch-helpers.js';
import { TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';

/**
 * The scaler with real Postgres, Redis, podman and authz. Requests go through authz's
 * Check (which counts them per agent per minute, as in production) and then to the
 * replica it names. Time: the control clock (windows, cool-down) is moved by the load
 * generator's ticker, 5 s per tick, so a minute of load takes about a second; podman
 * runs in real time. Nothing asserts how long anything takes: the test waits for states.
 */
describe('auto-scaling with podman (real authz, Postgres, Redis)', function () {
  this.timeout(240_000);

  const TICK_MS = 5_000;
  const REQUESTS_PER_TICK = 5; // 60 requests a minute: 6 replicas at 10 per replica
  let control: TestControl;
  let edge: TestAuthz;
  let autoscaler: Autoscaler;
  /** Passes the scaler finished (run, skipped or failed), as its pass observer counts them. */
  let passes = 0;
  const logs: Record<string, any>[] = [];

  before(async () => {
    control = await startControl({
      AUTOSCALE_INTERVAL_MS: '300',
      AUTOSCALE_TARGET_RPM_PER_REPLICA: '10',
      AUTOSCALE_TARGET_CPU_PERCENT: '70',
      AUTOSCALE_COOLDOWN_MS: String(4 * TICK_MS),
      // A short warm-up keeps start-up CPU out (see docs/autoscaling.md).
      AUTOSCALE_CPU_WARMUP_MS: '3000',
    }, { orchestrate: true });
    edge = await startTestAuthz({ redis: control.redis, clock: control.clock, agentDomain: control.config.agentUrl.domain });
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    autoscaler = new Autoscaler(
      // The driver stamps replicas in real time, not by the test's clock.
      { db: control.db, redis: control.redis, driver: { orchestrator: control.driver, clock: systemClock }, scaling: control.control.services.platformScaling, clock: control.clock, settings: control.config.autoscale, logger },
      { onPass: () => void (passes += 1) },
    );
    // The start of a minute, so every window of load holds the same number of ticks.
    control.clock.set(new Date(Math.ceil((Date.now() + 60_000) / 60_000) * 60_000 + 1_000));
    autoscaler.start();
  });

  after(async () => {
    await autoscaler?.stop();
    await edge?.close();
    await control?.close();
  });

  /** Sends `REQUESTS_PER_TICK` requests per tick through authz to the agent while `loading`; moves time until stopped. */
  function startTraffic(host: string) {
    const state = { loading: true, ticking: true, served: 0, refused: 0 };
    const done = (async () => {
      while (state.ticking) {
        if (state.loading) {
          for (let i = 0; i < REQUESTS_PER_TICK; i += 1) {
            const check = await edge.client.check({ host, path: '/health' });
            const upstream = check.dynamic_metadata?.fields.upstream?.stringValue;
            if (check.http_response !== 'ok_response' || !upstream) {
              state.refused += 1;
              continue;
            }
            const response = await fetch(`http://${upstream}/health`).catch(() => undefined);
            if (response?.ok) state.served += 1;
            else state.refused += 1;
          }
        }
        control.clock.advance(TICK_MS);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    return { state, stop: async () => { state.ticking = false; await done; } };
  }

  const desiredOf = async (id: string) => Number((await control.db('agents').where({ id }).first('desired_replicas')).desired_replicas);
  const runningOf = async (id: string) => ((await control.driver!.status(id))?.replicas ?? []).filter((r) => r.state === 'running').length;
  const scaleLogs = (id: string) => logs.filter((line) => line.agent_id === id && line.msg === 'auto-scaled agent');
  const quotaWarnings = (id: string) => logs.filter((line) => line.agent_id === id && line.level === 40 && line.limit === 'max_replicas');

  /** The scaler logs a change once the orchestrator has it, after the count is in Postgres. */
  const loggedDownTo = (id: string, count: number) => scaleLogs(id).some((line) => line.to === count && line.from > count);

  /** Waits until `count` more passes of the scaler have finished. */
  async function passesGo(count: number) {
    const target = passes + count;
    await waitFor(`${count} autoscale passes`, async () => (passes >= target ? true : undefined), 60_000, 50);
  }

  it('scales out under steady load up to the plan quota, logs the held scale-up once, and scales back in to min_replicas', async () => {
    const { token } = await control.signUp();
    const { id, agent } = await createRunningAgent(control, token, {
      access: 'public',
      rate_limit_rpm: 100_000,
      deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 5, resources: { cpu: 0.5, memory_mb: 128 } },
    });
    const host = new URL(agent.url).host;
    let highest = 1;
    const watch = setInterval(() => void desiredOf(id).then((n) => (highest = Math.max(highest, n)), () => undefined), 100);
    const traffic = startTraffic(host);
    try {
      // 60 requests a minute want 6 replicas (5 by max_replicas); the free plan allows 3.
      await waitFor('3 running replicas', async () => ((await runningOf(id)) === 3 && (await desiredOf(id)) === 3 ? true : undefined), 120_000);
      await waitFor('the held scale-out to be logged', async () => (quotaWarnings(id).length > 0 ? true : undefined));
      // Load goes on; the scaler keeps wanting more and keeps being held, without an error loop.
      await passesGo(8);
      assert.equal(await desiredOf(id), 3);
      assert.equal(quotaWarnings(id).length, 1, JSON.stringify(quotaWarnings(id)));
      const warning = quotaWarnings(id)[0]!;
      assert.equal(warning.limit_value, 3);
      assert.ok(warning.wanted > 3);
      assert.ok(!logs.some((line) => line.agent_id === id && line.level >= 50), 'no error logged');
      assert.ok(traffic.state.served > 0, 'requests reached the agent');

      traffic.state.loading = false;
      await waitFor('back to min_replicas', async () => (loggedDownTo(id, 1) && (await runningOf(id)) === 1 ? true : undefined), 120_000);
      assert.equal(await desiredOf(id), 1);
    } finally {
      clearInterval(watch);
      await traffic.stop();
    }
    assert.ok(highest <= 3, `never past the quota, saw ${highest}`);
    const ins = scaleLogs(id).filter((line) => line.to < line.from);
    assert.deepEqual(ins.map((line) => [line.from, line.to]), [[3, 2], [2, 1]], 'scale-in one replica at a time');
    assert.ok(ins.every((line) => line.reason === 'idle'));
    const outs = scaleLogs(id).filter((line) => line.to > line.from);
    assert.ok(outs.length >= 1 && outs.every((line) => line.to <= 3 && line.reason === 'load'), JSON.stringify(outs));
  });

  it('skips a scale-out the quota forbids entirely, logs it once, and scales out once the account has room', async () => {
    const { token } = await control.signUp();
    // Another agent holds 2 of the free plan's 3 replicas.
    const { id: otherId } = await createRunningAgent(control, token, { deploy: { replicas: 2, resources: { cpu: 0.5, memory_mb: 128 } } });
    const { id, agent } = await createRunningAgent(control, token, {
      access: 'public',
      rate_limit_rpm: 100_000,
      deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 5, resources: { cpu: 0.5, memory_mb: 128 } },
    });
    const traffic = startTraffic(new URL(agent.url).host);
    try {
      await waitFor('the skipped scale-out to be logged', async () => (quotaWarnings(id).length > 0 ? true : undefined), 60_000);
      await passesGo(8);
      assert.equal(await desiredOf(id), 1, 'not one replica more than the quota allows');
      assert.equal(quotaWarnings(id).length, 1, 'logged once, not on every pass');
      assert.deepEqual([quotaWarnings(id)[0]!.replicas, quotaWarnings(id)[0]!.requested], [1, 4]);
      assert.deepEqual(scaleLogs(id), [], 'nothing was scaled');

      // Room again: the scaler goes on from where it was held.
      expectStatus(await control.request('POST', `/agents/${otherId}/scale`, { token, body: { direction: 'down', count: 2 } }), 200);
      await waitFor('the scale-out now that there is room', async () => ((await desiredOf(id)) === 3 ? true : undefined), 60_000);
    } finally {
      await traffic.stop();
    }
  });

  it('lets an auto-scaled agent be scaled by hand within its bounds; the scaler resumes from there', async () => {
    const { token } = await control.signUp();
    const { id } = await createRunningAgent(control, token, {
      access: 'public',
      deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 3, resources: { cpu: 0.5, memory_mb: 128 } },
    });
    await passesGo(2);
    assert.equal(await desiredOf(id), 1, `no load: stays at min_replicas ${JSON.stringify(logs.filter((line) => line.agent_id === id).slice(-3))}`);

    const manual = await control.request('POST', `/agents/${id}/scale`, { token, body: { direction: 'up', count: 2 } });
    expectStatus(manual, 200);
    assert.equal(manual.body.current_replicas, 3);
    // The scaler waits a cool-down from the manual change before it moves the agent.
    await passesGo(3);
    assert.equal(await desiredOf(id), 3, 'held for the cool-down after the manual scale');

    const traffic = startTraffic(new URL((await control.request('GET', `/agents/${id}`, { token })).body.url).host);
    traffic.state.loading = false; // only time moves
    try {
      await waitFor('scaled back in to 1', async () => (loggedDownTo(id, 1) ? true : undefined), 120_000);
      assert.equal(await desiredOf(id), 1);
    } finally {
      await traffic.stop();
    }
    assert.deepEqual(scaleLogs(id).map((line) => [line.from, line.to]), [[3, 2], [2, 1]]);
  });

  it('scales out on CPU alone, measured against each replica\'s share', async () => {
    // The test image with a busy loop beside its server: a 0.1-vCPU replica is at its limit, 100 % of its share.
    const image = buildBusyImage(podmanRuntime(control.config.podman));
    try {
      const { token } = await control.signUp();
      const { id } = await createRunningAgent(control, token, {
        deploy: { image, replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 2, resources: { cpu: 0.1, memory_mb: 64 } },
      });
      await waitFor('a scale-out on CPU', async () => (scaleLogs(id).length > 0 ? true : undefined), 90_000);
      const [out] = scaleLogs(id);
      assert.deepEqual([out!.from, out!.to, out!.reason, out!.requests_last_minute], [1, 2, 'load', 0]);
      assert.ok(out!.cpu_percent > 70, `cpu ${out!.cpu_percent}`);
      // Stop the busy replicas at once: they compete for the machine's cores.
      assert.equal((await control.request('DELETE', `/agents/${id}`, { token })).status, 204);
    } finally {
      execFileSync('podman', [...runtimeArgs(podmanRuntime(control.config.podman)), 'rmi', '--force', image], { stdio: 'pipe' });
    }
  });

  it('leaves an auto-scaled agent its owner stopped (0 replicas) stopped', async () => {
    const { token } = await control.signUp();
    const created = await control.request('POST', '/agents', {
      token,
      body: { name: 'stopped', deploy: { replicas: 0, auto_scale: true, min_replicas: 1, max_replicas: 3 } },
    });
    expectStatus(created, 201);
    await passesGo(3);
    assert.equal(await desiredOf(created.body.id), 0);
    assert.equal(await runningOf(created.body.id), 0);
  });
});

const runtimeArgs = (runtime: string | null) => (runtime ? ['--runtime', runtime] : []);

/** FROM the local test image (nothing is pulled), with a shell loop that keeps one core's worth busy. */
function buildBusyImage(runtime: string | null): string {
  const image = 'localhost/platform-test-busy:1';
  const context = mkdtempSync(join(tmpdir(), 'busy-image-'));
  try {
    writeFileSync(join(context, 'Containerfile'), `FROM ${TEST_IMAGE}\nCMD ["/bin/sh", "-c", "while :; do :; done & exec /app/entry.sh"]\n`);
    execFileSync('podman', [...runtimeArgs(runtime), 'build', '-q', '-t', image, context], { stdio: 'pipe' });
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  return image;
}
