import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startControl, type TestControl } from './support/control-harness.js';
import { containersOf, networkExists } from './support/podman.js';
import type { Orchestrator } from '../control/orchestrator/types.js';
import { waitFor } from './support/wait.js';

/**
 * A registry that accepts connections and never answers: podman's pull waits on the TLS
 * handshake (10 s, then it retries), so a pull from it lasts until PULL_TIMEOUT_SECONDS
 * kills it. The test's pulls are stuck for as long as the test needs, with no fake podman.
 */
class SilentRegistry {
  readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((socket) => {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.resume(); // read (and drop) what comes, or the client's FIN is never seen and the socket never closes
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Connections podman holds open right now: pulls still in progress. */
  get waitingPulls(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

describe('agents on podman: one account cannot stall another (issue 13, item 5)', function () {
  this.timeout(240_000);
  const PULL_TIMEOUT_SECONDS = 25;
  let control: TestControl;
  let registry: SilentRegistry;
  let registryAddress: string;

  before(async () => {
    registry = new SilentRegistry();
    registryAddress = await registry.listen();
    control = await startControl({ PULL_TIMEOUT_SECONDS: String(PULL_TIMEOUT_SECONDS), ORCHESTRATOR_CONCURRENCY: '2' }, { orchestrate: true });
  });
  after(async () => {
    await control?.close();
    await registry?.close();
  });

  const agentOf = async (token: string, id: string) => (await control.request('GET', `/agents/${id}`, { token })).body;

  it("answers at once while six pulls hang, runs another account's agent meanwhile, and fails the stuck ones at the pull deadline", async () => {
    const stuck = await control.signUp();
    await control.db('accounts').where({ id: stuck.user.account_id }).update({ plan: 'pro' });
    const stuckIds: string[] = [];
    for (let i = 1; i <= 6; i += 1) {
      const created = await control.request('POST', '/agents', {
        token: stuck.token,
        body: { name: `stuck-${i}`, api_key: 'sk-test', deploy: { image: `${registryAddress}/stuck-${i}:1`, replicas: 1 } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.status, 'pending');
      stuckIds.push(created.body.id);
    }
    await waitFor('podman to be pulling from the silent registry', async () => (registry.waitingPulls > 0 ? true : undefined));

    // Another account's create is answered (and its agent runs) while those pulls hang.
    const other = await control.signUp();
    const created = await control.request('POST', '/agents', { token: other.token, body: { name: 'other', api_key: 'sk-test', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await waitFor("the other account's agent to be running", async () => {
      const agent = await agentOf(other.token, created.body.id);
      if (agent.status === 'failed' || agent.status === 'crashed') throw new Error(`${agent.status}: ${agent.error}`);
      return agent.status === 'running' ? true : undefined;
    }, 60_000);
    const whileStuck = await Promise.all(stuckIds.map((id) => agentOf(stuck.token, id)));
    assert.deepEqual(whileStuck.map((agent) => [agent.status, agent.error]), stuckIds.map(() => ['pending', null]), 'the stuck pulls had not ended');
    assert.ok(registry.waitingPulls > 0, 'pulls were still in progress');

    // A delete is answered while its agent's pull hangs; the row is gone at once.
    const [deleted, ...remaining] = stuckIds as [string, ...string[]];
    assert.equal((await control.request('DELETE', `/agents/${deleted}`, { token: stuck.token })).status, 204);
    assert.equal((await control.request('GET', `/agents/${deleted}`, { token: stuck.token })).status, 404);

    // At the deadline podman is killed and the replicas fail with the reason.
    for (const id of remaining) {
      const agent = await waitFor(`agent ${id} to fail at the pull deadline`, async () => {
        const current = await agentOf(stuck.token, id);
        return current.status === 'failed' ? current : undefined;
      }, 90_000);
      assert.match(agent.error, new RegExp(`could not be pulled: no result within ${PULL_TIMEOUT_SECONDS} s \\(PULL_TIMEOUT_SECONDS\\)`));
    }
    await waitFor('podman to let go of the silent registry', async () => (registry.waitingPulls === 0 ? true : undefined), 30_000);
    assert.deepEqual(containersOf(deleted), []);
    assert.equal((await agentOf(other.token, created.body.id)).status, 'running');
  });

  describe('a crash right after the commit, before the orchestrator acted', () => {
    let first: TestControl | undefined;
    let second: TestControl | undefined;
    after(async () => {
      await second?.close();
    });

    it('loses nothing: the restarted control API starts the created agent and removes the deleted one, as Postgres says', async () => {
      first = await startControl({}, { orchestrate: true });
      const { token } = await first.signUp();
      const doomed = await first.request('POST', '/agents', { token, body: { name: 'doomed', api_key: 'sk-test', deploy: { replicas: 1 } } });
      await waitFor('the doomed agent placed', async () => (containersOf(doomed.body.id).length === 1 ? true : undefined));
      await waitFor('the queue to be empty', async () => (first!.control.services.runner!.pending.inFlight === 0 ? true : undefined));

      // From here the orchestrator never answers: the process "dies" before any step acts.
      const driver = first.driver as Orchestrator;
      driver.submit = () => new Promise(() => undefined);
      driver.remove = () => new Promise(() => undefined);
      const created = await first.request('POST', '/agents', { token, body: { name: 'created', api_key: 'sk-test', deploy: { replicas: 2 } } });
      assert.equal(created.status, 201);
      assert.equal((await first.request('DELETE', `/agents/${doomed.body.id}`, { token })).status, 204);
      assert.deepEqual(first.control.services.runner!.pending, { waiting: 0, inFlight: 2 }, 'both answers came while their steps were still in flight');
      await first.crash();
      assert.deepEqual(containersOf(created.body.id), [], 'nothing was started before the crash');
      assert.equal(containersOf(doomed.body.id).length, 1, 'nothing was removed before the crash');

      second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
      await waitFor('the created agent running with 2 replicas', async () => {
        const response = await second!.request('GET', `/agents/${created.body.id}`, { token });
        return response.body.status === 'running' && response.body.replicas === 2 ? true : undefined;
      }, 60_000);
      assert.equal(containersOf(created.body.id).length, 2);
      await waitFor("the deleted agent's container removed", async () => (containersOf(doomed.body.id).length === 0 ? true : undefined));
      await waitFor("the deleted agent's network removed", async () => (networkExists(`agent-${doomed.body.id}`) ? undefined : true));
    });
  });
});
