import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';
import { containersOf, podman } from './support/podman.js';
import { waitFor } from './support/wait.js';

/**
 * A replica reads its agent services token from a directory of the host mounted into its
 * container (control/orchestrator/podman/replica-tokens.ts), which the control API rewrites
 * before the token expires. A control API that restarts and sees another directory at that
 * path, as each start of a systemd service with PrivateTmp does, must not leave the replica
 * reading a token no one renews: it restarts the container, so that podman mounts the
 * directory it now writes.
 */
describe('agents on podman: a replica whose token directory is not the one the control API writes', function () {
  this.timeout(240_000);
  let first: TestControl | undefined;
  let second: TestControl | undefined;
  let firstCrashed = false;
  after(async () => {
    // Whichever control API is left removes the agent's containers, network and files.
    if (second) await second.close();
    else if (first && !firstCrashed) await first.close();
  });

  const startedAt = (container: string) => podman(['container', 'inspect', '--format', '{{.State.StartedAt}}', container]).trim();
  const tokenSeenBy = (container: string) => podman(['exec', container, 'cat', '/run/agent-services/token']).trim();

  it('is restarted by the control API that adopts it, and then reads the token that control API writes', async () => {
    first = await startControl({}, { orchestrate: true });
    const { token } = await first.signUp();
    const created = await first.request('POST', '/agents', { token, body: { name: 'token mount', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agentId = created.body.id as string;
    await waitFor('the agent running', async () => ((await first!.request('GET', `/agents/${agentId}`, { token })).body.status === 'running' ? true : undefined));
    const [replica] = containersOf(agentId);
    const tokenDirectory = join(first.config.podman.stateDirectory, 'agent-tokens', replica!);
    assert.equal(tokenSeenBy(replica!), readFileSync(join(tokenDirectory, 'token'), 'utf8').trim(), 'at first the replica reads what the control API wrote');
    const firstStart = startedAt(replica!);
    await first.crash();
    firstCrashed = true;

    // What the next start sees when its /tmp is not the last one's: a directory at the same
    // path that is not the one the running container mounted.
    rmSync(tokenDirectory, { recursive: true, force: true });
    mkdirSync(tokenDirectory, { recursive: true });

    second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
    await waitFor('the replica restarted and running again', async () => {
      const response = await second!.request('GET', `/agents/${agentId}`, { token });
      return response.body.status === 'running' && startedAt(replica!) !== firstStart ? true : undefined;
    });
    assert.deepEqual(containersOf(agentId), [replica], 'the same container, adopted and restarted, not replaced');
    const written = readFileSync(join(tokenDirectory, 'token'), 'utf8').trim();
    assert.equal(tokenSeenBy(replica!), written, 'the replica reads the token the restarted control API writes');
  });
});
