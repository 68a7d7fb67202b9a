import { strict as assert } from 'node:assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { PodmanCli } from '../control/orchestrator/podman/cli.js';
import { AgentContainers } from '../control/orchestrator/podman/containers.js';
import { ReplicaTokenFiles } from '../control/orchestrator/podman/replica-tokens.js';
import { SecretScratch } from '../control/orchestrator/podman/secret-scratch.js';
import type { PodmanSettings } from '../control/orchestrator/podman/settings.js';
import { ManualClock } from './support/manual-clock.js';

/**
 * How AgentContainers.remove schedules its `podman rm`s (one per container, since podman
 * 4.3 removes none of several names when one is missing; test/orchestration-recovery.test.ts covers
 * the removal itself on real podman): a bounded number at once, each container once, a
 * failure not stopping the rest; and what goes with a container removed, its token
 * directory. The CLI here only records the calls it is given.
 */
describe('podman driver: removing many containers', function () {
  /** Removal writes no file: the scratch is never made. */
  const unusedScratch = new SecretScratch('/nonexistent/never-made');
  it('runs one rm per container, ten at a time at most, and goes on past a failure', async function () {
    let inFlight = 0;
    let mostInFlight = 0;
    const removed: string[] = [];
    const cli = {
      run: async (args: string[]) => {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        const name = args.at(-1)!;
        if (name === 'replica-7') throw new Error('no such container');
        removed.push(name);
        return { stdout: '', stderr: '' };
      },
    } as unknown as PodmanCli;
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const containers = new AgentContainers(cli, { stopTimeoutSeconds: 10 } as PodmanSettings, logger, unusedScratch);

    const ids = Array.from({ length: 35 }, (_, i) => `replica-${i}`);
    await containers.remove(ids);

    assert.equal(mostInFlight, 10);
    assert.deepEqual([...removed].sort(), ids.filter((id) => id !== 'replica-7').sort());
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /removing a container failed.*replica-7|replica-7.*removing a container failed/);
  });

  it("drops a removed replica's token directory, and keeps the one of a replica whose removal failed", async function () {
    const directory = join(mkdtempSync(join(tmpdir(), 'removal-tokens-')), 'agent-tokens');
    try {
      const clock = new ManualClock(new Date('2026-11-29T10:00:00Z'));
      const access = { url: 'http://host.containers.internal:7090', port: 7090, directory, maxSessionBytes: 1_048_576, mint: () => ({ token: 't', expiresAt: new Date(clock.now().getTime() + 3_600_000) }) };
      const tokens = new ReplicaTokenFiles(access, clock, pino({ level: 'silent' }));
      for (const id of ['gone', 'stuck', 'discarded']) tokens.prepare(id, 'agt_A');
      const cli = {
        run: async (args: string[]) => {
          if (args.at(-1) === 'stuck') throw new Error('container is in use');
          return { stdout: '', stderr: '' };
        },
      } as unknown as PodmanCli;
      const containers = new AgentContainers(cli, { stopTimeoutSeconds: 10 } as PodmanSettings, pino({ level: 'silent' }), unusedScratch, { url: access.url, maxSessionBytes: access.maxSessionBytes, tokens });

      await containers.remove(['gone', 'stuck']);
      await containers.discard('discarded');

      assert.deepEqual(['gone', 'stuck', 'discarded'].filter((id) => existsSync(join(directory, id))), ['stuck'], 'the one left may still run, and read its token');
    } finally {
      rmSync(join(directory, '..'), { recursive: true, force: true });
    }
  });

  it('removes nothing, and runs nothing, when given no container', async function () {
    let calls = 0;
    const cli = { run: async () => ((calls += 1), { stdout: '', stderr: '' }) } as unknown as PodmanCli;
    await new AgentContainers(cli, { stopTimeoutSeconds: 10 } as PodmanSettings, pino({ level: 'silent' }), unusedScratch).remove([]);
    assert.equal(calls, 0);
  });
});
