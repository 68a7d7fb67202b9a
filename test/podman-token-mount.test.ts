import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stateDirectoryOf } from '../control/orchestrator/podman/host.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { containersOf, podman } from './support/podman.js';
import { waitFor } from './support/wait.js';

const startedAt = (container: string) => podman(['container', 'inspect', '--format', '{{.State.StartedAt}}', container]).trim();
const tokenSeenBy = (container: string) => podman(['exec', container, 'cat', '/run/agent-services/token']).trim();

/** A new account's agent of one replica, running on `control`: the owner's token, the agent and its container. */
async function runningAgentOfOneReplica(control: TestControl, name: string) {
  const { token } = await control.signUp();
  const created = await control.request('POST', '/agents', { token, body: { name, deploy: { replicas: 1 } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const agentId = created.body.id as string;
  await waitFor('the agent running', async () => ((await control.request('GET', `/agents/${agentId}`, { token })).body.status === 'running' ? true : undefined));
  const [replica] = containersOf(agentId);
  assert.ok(replica, 'its container');
  return { token, agentId, replica };
}

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

  it('is restarted by the control API that adopts it, and then reads the token that control API writes', async () => {
    first = await startControl({}, { orchestrate: true });
    const { token, agentId, replica } = await runningAgentOfOneReplica(first, 'token mount');
    const tokenDirectory = join(stateDirectoryOf(first.config.podman), 'agent-tokens', replica);
    assert.equal(tokenSeenBy(replica), readFileSync(join(tokenDirectory, 'token'), 'utf8').trim(), 'at first the replica reads what the control API wrote');
    const firstStart = startedAt(replica);
    await first.crash();
    firstCrashed = true;

    // What the next start sees when its /tmp is not the last one's: a directory at the same
    // path that is not the one the running container mounted.
    rmSync(tokenDirectory, { recursive: true, force: true });
    mkdirSync(tokenDirectory, { recursive: true });

    second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
    await waitFor('the replica restarted and running again', async () => {
      const response = await second!.request('GET', `/agents/${agentId}`, { token });
      return response.body.status === 'running' && startedAt(replica) !== firstStart ? true : undefined;
    });
    assert.deepEqual(containersOf(agentId), [replica], 'the same container, adopted and restarted, not replaced');
    const written = readFileSync(join(tokenDirectory, 'token'), 'utf8').trim();
    assert.equal(tokenSeenBy(replica), written, 'the replica reads the token the restarted control API writes');
  });
});

/**
 * The driver's directory by default (PODMAN_STATE_DIR unset) is where podman keeps the
 * state of this boot, not in $TMPDIR: a control API that restarts with another /tmp, as
 * each start of a systemd service with PrivateTmp does, still finds the token directories
 * its replicas mount, and restarts none of them.
 */
describe("agents on podman: the driver's default directory, across a restart with another /tmp", function () {
  this.timeout(240_000);
  let first: TestControl | undefined;
  let second: TestControl | undefined;
  let firstCrashed = false;
  const earlierTmpdir = process.env.TMPDIR;
  const hostTmp = tmpdir();
  const privateTmps: string[] = [];
  /** A /tmp of this start's own, as PrivateTmp gives one, for what the control API puts in $TMPDIR. */
  const newPrivateTmp = () => {
    const directory = mkdtempSync(join(hostTmp, 'private-tmp-'));
    privateTmps.push(directory);
    process.env.TMPDIR = directory;
  };
  after(async () => {
    if (second) await second.close();
    else if (first && !firstCrashed) await first.close();
    if (earlierTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = earlierTmpdir;
    for (const directory of privateTmps) rmSync(directory, { recursive: true, force: true });
  });

  it('is adopted without a restart, and reads the token the new control API writes', async () => {
    newPrivateTmp();
    first = await startControl({}, { orchestrate: true });
    const { token, agentId, replica } = await runningAgentOfOneReplica(first, 'default directory');
    const firstToken = tokenSeenBy(replica);
    const firstStart = startedAt(replica);
    await first.crash();
    firstCrashed = true;

    newPrivateTmp();
    second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
    const tokenDirectory = join(stateDirectoryOf(second.config.podman), 'agent-tokens', replica);
    assert.ok(!tokenDirectory.startsWith(tmpdir()), `${tokenDirectory} is not in this start's /tmp`);
    // The new control API holds no token of the replica's yet, so it mints one when it adopts it.
    const written = await waitFor('a token written by the new control API', async () => {
      const token = readFileSync(join(tokenDirectory, 'token'), 'utf8').trim();
      return token !== firstToken ? token : undefined;
    });
    assert.equal(tokenSeenBy(replica), written, 'the replica reads it through the directory it has mounted since it started');
    assert.equal((await second.request('GET', `/agents/${agentId}`, { token })).body.status, 'running');
    assert.equal(startedAt(replica), firstStart, 'not restarted');
  });
});
