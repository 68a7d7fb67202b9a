import assert from 'node:assert/strict';
import { pino } from 'pino';
import { PodmanCli } from '../control/orchestrator/podman/cli.js';
import { AgentContainers, stopCallDeadlineMs } from '../control/orchestrator/podman/containers.js';
import { SecretScratch } from '../control/orchestrator/podman/secret-scratch.js';
import type { PodmanSettings } from '../control/orchestrator/podman/settings.js';
import { podman } from './support/podman.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';

/**
 * A replica that does not stop on SIGTERM is killed by podman once STOP_TIMEOUT_SECONDS
 * have passed: podman sends the SIGKILL itself, so the driver must let the podman call
 * run that long and a little more (control/orchestrator/podman/containers.ts,
 * stopCallDeadlineMs). A fixed 120 s deadline ended podman first for timeouts past 115 s,
 * and the replica then ran on, never killed.
 */
describe('podman driver: stopping a replica that ignores SIGTERM', function () {
  this.timeout(60_000);
  const name = `test-stop-deadline-${process.pid}`;
  after(() => podman(['rm', '--force', '--time', '0', name]));

  // 0 to 3600: STOP_TIMEOUT_SECONDS's bounds (control/orchestrator/podman/settings.ts).
  it('lets every podman stop outlast its timeout and the 5 s podman waits after SIGKILL, over all of STOP_TIMEOUT_SECONDS (0 to 3600)', () => {
    for (let seconds = 0; seconds <= 3600; seconds += 1) {
      assert.ok(stopCallDeadlineMs(seconds) > (seconds + 5) * 1000, `STOP_TIMEOUT_SECONDS=${seconds}: ${stopCallDeadlineMs(seconds)} ms`);
    }
  });

  it('is killed by podman at the stop timeout, and the stop returns', async () => {
    ensureTestImage('runc');
    // PID 1 of a container ignores a signal it has no handler for: sleep does not stop on SIGTERM.
    podman(['run', '--detach', '--name', name, '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=512:512', TEST_IMAGE, 'sleep', '3600']);
    const settings = { stopTimeoutSeconds: 2 } as PodmanSettings;
    const containers = new AgentContainers(new PodmanCli('podman', ['--runtime', 'runc'], { PATH: process.env.PATH ?? '/usr/bin:/bin' }), settings, pino({ level: 'silent' }), new SecretScratch('/nonexistent/never-made'));
    const began = Date.now();
    await containers.stop(name);
    const tookMs = Date.now() - began;
    const state = JSON.parse(podman(['container', 'inspect', '--format', '{{json .State}}', name])) as { Running: boolean; ExitCode: number };
    assert.deepEqual({ running: state.Running, exitCode: state.ExitCode }, { running: false, exitCode: 137 }, 'killed by SIGKILL (128 + 9)');
    assert.ok(tookMs >= 2000, `stopped after ${tookMs} ms, before its timeout`);
  });
});
