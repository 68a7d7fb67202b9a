import assert from 'node:assert/strict';
import type { TestControl } from './control-harness.js';
import { waitFor } from './wait.js';

/** What the lifecycle suite needs to know of a driver beyond the Orchestrator interface. */
export interface LifecycleDriver {
  /** Names the suite: `podman`, `nomad`. */
  name: string;
  /** Starts the control API with this driver (a fresh database, its own containers). */
  start(): Promise<TestControl>;
  /** The agent's replicas that still exist where the driver runs them (containers, allocations), whatever their state. */
  replicasLeft(control: TestControl, agentId: string): Promise<number>;
  /** What the agent owns besides its replicas and that deleting it must remove (a network; a job and a Variable), still there. */
  leftovers(control: TestControl, agentId: string): Promise<string[]>;
  /**
   * A replica that never listens: the podman driver routes it after its start grace
   * period (so the edge answers 502); on Nomad its Consul check never passes, so it never is.
   */
  silentReplica: 'routed-after-grace' | 'never-routed';
  /** Whether the host's bridge a replica at `ip` is on keeps its MAC address when a port goes (podman: bridge-address.ts); absent where the driver makes no bridge. */
  bridgeAddressPinned?(ip: string): boolean;
  /** Stops what `start` started besides the control API (a fake cluster). */
  finish?(): Promise<void>;
}

/** The lifecycle every driver must pass, through the control API as a user drives it. */
export function lifecycleSuite(driver: LifecycleDriver): void {
  describe(`agents on ${driver.name}: lifecycle`, function () {
    this.timeout(180_000);
    let control: TestControl;

    before(async () => {
      control = await driver.start();
    });
    after(async () => {
      await control?.close();
      await driver.finish?.();
    });

    async function createAgent(token: string, deploy: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
      const response = await control.request('POST', '/agents', {
        token,
        body: { name: 'lifecycle', api_key: 'sk-test', deploy: { replicas: 1, ...deploy }, ...extra },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      return response.body;
    }

    const getAgent = async (token: string, id: string) => (await control.request('GET', `/agents/${id}`, { token })).body;

    const waitForAgent = (token: string, id: string, predicate: (agent: any) => boolean, what: string, timeoutMs = 60_000) =>
      waitFor(what, async () => {
        const agent = await getAgent(token, id);
        return predicate(agent) ? agent : undefined;
      }, timeoutMs);

    async function runningAddresses(id: string): Promise<string[]> {
      const status = await control.driver!.status(id);
      return (status?.replicas ?? []).filter((r) => r.state === 'running' && r.address).map((r) => r.address!);
    }

    it('runs a created agent: running, and /health answers on the published port', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token);
      assert.equal(created.status, 'pending');
      const agent = await waitForAgent(token, created.id, (a) => a.status === 'running', 'running');
      assert.equal(agent.replicas, 1);
      const [address] = await runningAddresses(created.id);
      assert.match(address!, /^\d+\.\d+\.\d+\.\d+:\d+$/);
      const health = await fetch(`http://${address}/health`);
      assert.equal(health.status, 200);
      if (driver.bridgeAddressPinned) assert.equal(driver.bridgeAddressPinned(address!.split(':')[0]!), true, "the agent bridge's MAC address is pinned once a replica runs on it");
    });

    it('scales 1 → 3 → 1 with the right replica counts', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token);
      await waitForAgent(token, created.id, (a) => a.status === 'running', 'running');

      const up = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'up', count: 2 } });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      assert.deepEqual(
        { previous: up.body.previous_replicas, current: up.body.current_replicas, direction: up.body.direction, status: up.body.status },
        { previous: 1, current: 3, direction: 'up', status: 'scaling' },
      );
      const three = await waitForAgent(token, created.id, (a) => a.status === 'running' && a.replicas === 3, '3 running replicas');
      assert.equal(three.deploy.replicas, 3);
      assert.equal((await runningAddresses(created.id)).length, 3);

      const down = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'down', count: 2 } });
      assert.equal(down.body.current_replicas, 1);
      await waitForAgent(token, created.id, (a) => a.status === 'running' && a.replicas === 1, '1 running replica');
      await waitFor('2 replicas removed', async () => ((await driver.replicasLeft(control, created.id)) === 1 ? true : undefined));
    });

    it('scales to 0: stopped, and back up', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token);
      await waitForAgent(token, created.id, (a) => a.status === 'running', 'running');
      const down = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'down', count: 1 } });
      assert.equal(down.body.current_replicas, 0);
      await waitForAgent(token, created.id, (a) => a.status === 'stopped' && a.replicas === 0, 'stopped');
      await waitFor('no replica left', async () => ((await driver.replicasLeft(control, created.id)) === 0 ? true : undefined));
      await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'up', count: 1 } });
      await waitForAgent(token, created.id, (a) => a.status === 'running' && a.replicas === 1, 'running again');
    });

    it('refuses to scale below 0 or past deploy.max_replicas (422) and checks the body', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token, { max_replicas: 2 });
      const below = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'down', count: 2 } });
      assert.equal(below.status, 422);
      assert.deepEqual(below.body.details.errors[0].loc, ['body', 'count']);
      const past = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'up', count: 2 } });
      assert.equal(past.status, 422);
      const sideways = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'sideways', count: 1 } });
      assert.equal(sideways.status, 422);
      const zero = await control.request('POST', `/agents/${created.id}/scale`, { token, body: { direction: 'up', count: 0 } });
      assert.equal(zero.status, 422);
    });

    it('redeploys under a steady stream of requests without a single failure', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token, { replicas: 2 });
      await waitForAgent(token, created.id, (a) => a.status === 'running' && a.replicas === 2, 'running');
      const before = new Set((await control.driver!.status(created.id))!.replicas.map((r) => r.id));

      let sent = 0;
      const failures: string[] = [];
      let streaming = true;
      // Like the edge: each request goes to a replica of the current routing set.
      const stream = (async () => {
        while (streaming) {
          const addresses = await runningAddresses(created.id);
          const address = addresses[sent % Math.max(1, addresses.length)];
          const routedAt = Date.now();
          sent += 1;
          try {
            if (!address) throw new Error('no routable replica');
            const response = await fetch(`http://${address}/health`);
            if (response.status !== 200) failures.push(`status ${response.status}`);
            await response.text();
          } catch (error) {
            // What went wrong, where, and how long after the replica was seen routed: a failure
            // long past the drain period is a request an old replica took and never answered.
            const cause = (error as { cause?: { code?: string; message?: string } }).cause;
            failures.push(`${(error as Error).message} (${cause?.code ?? cause?.message ?? 'no cause'}) at ${address}, ${Date.now() - routedAt} ms after it was seen routed`);
            // A driver that answers status from memory never yields: let its watches run.
            await new Promise((resolve) => setImmediate(resolve));
          }
        }
      })();

      const redeploy = await control.request('POST', `/agents/${created.id}/deploy`, { token, body: { env: [{ key: 'GENERATION', value: '2' }] } });
      assert.equal(redeploy.status, 202, JSON.stringify(redeploy.body));
      assert.equal(redeploy.body.version, created.version + 1);
      await waitFor('the old replicas to be replaced', async () => {
        const status = await control.driver!.status(created.id);
        const ids = status!.replicas.map((r) => r.id);
        return ids.length === 2 && ids.every((id) => !before.has(id)) && status!.replicas.every((r) => r.state === 'running') ? true : undefined;
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      streaming = false;
      await stream;
      assert.ok(sent > 20, `only ${sent} requests were sent`);
      assert.deepEqual(failures, [], `${failures.length} of ${sent} requests failed`);
      const agent = await getAgent(token, created.id);
      assert.equal(agent.status, 'running');
      assert.deepEqual(agent.deploy.env, [{ key: 'GENERATION', value: '2', secret: false }]);
    });

    it('keeps omitted deploy fields and the model key on redeploy', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token, { port: 8080, resources: { cpu: 0.5, memory_mb: 256 }, env: [{ key: 'A', value: '1' }] });
      const redeploy = await control.request('POST', `/agents/${created.id}/deploy`, { token, body: { replicas: 1 } });
      assert.equal(redeploy.status, 202);
      assert.deepEqual(redeploy.body.deploy.resources, created.deploy.resources);
      assert.deepEqual(redeploy.body.deploy.env, [{ key: 'A', value: '1', secret: false }]);
      const empty = await control.request('POST', `/agents/${created.id}/deploy`, { token });
      assert.equal(empty.status, 202, 'a deploy without a body redeploys as it is');
      assert.equal(empty.body.version, created.version + 2);
    });

    it('marks an agent whose image cannot be pulled as failed, with the reason', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token, { image: 'registry.invalid/no/such-image:1' });
      const agent = await waitForAgent(token, created.id, (a) => a.status === 'failed', 'failed', 120_000);
      assert.match(agent.error, /registry\.invalid\/no\/such-image:1/);
      assert.match(agent.error, /could not be pulled/);
      assert.equal(agent.replicas, 0);
    });

    it('marks an agent whose container exits at once as crashed after its restarts', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token, { env: [{ key: 'MODE', value: 'exit' }] });
      const agent = await waitForAgent(token, created.id, (a) => a.status === 'crashed', 'crashed');
      assert.match(agent.error, /exited with code 3/);
      const status = await control.driver!.status(created.id);
      assert.equal(status!.replicas[0]!.restarts, 3, 'the budget of 2 restarts was used, then the third exit crashed it');
    });

    if (driver.silentReplica === 'routed-after-grace') {
      it('routes a replica that never listens after the start grace period (so the edge answers 502)', async () => {
        const { token } = await control.signUp();
        const created = await createAgent(token, { env: [{ key: 'MODE', value: 'silent' }] });
        const starting = await waitForAgent(token, created.id, (a) => a.status === 'starting', 'starting');
        assert.equal(starting.replicas, 0);
        await waitForAgent(token, created.id, (a) => a.status === 'running' && a.replicas === 1, 'running after the grace period', 30_000);
        const [address] = await runningAddresses(created.id);
        await assert.rejects(fetch(`http://${address}/health`), 'nothing listens behind the routed address');
      });
    } else {
      it('never routes a replica that never listens: its health check never passes', async () => {
        const { token } = await control.signUp();
        const created = await createAgent(token, { env: [{ key: 'MODE', value: 'silent' }] });
        await waitFor('its container to run', async () => ((await driver.replicasLeft(control, created.id)) === 1 ? true : undefined));
        const starting = await waitForAgent(token, created.id, (a) => a.status === 'starting', 'starting');
        assert.equal(starting.replicas, 0);
        assert.deepEqual(await runningAddresses(created.id), []);
      });
    }

    it('deletes an agent with its containers and network', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(token, { replicas: 2 });
      await waitForAgent(token, created.id, (a) => a.status === 'running' && a.replicas === 2, 'running');
      assert.equal(await driver.replicasLeft(control, created.id), 2);
      assert.notDeepEqual(await driver.leftovers(control, created.id), [], 'the agent owns something besides its replicas');
      const deleted = await control.request('DELETE', `/agents/${created.id}`, { token });
      assert.equal(deleted.status, 204);
      // The answer comes once the row is gone; the containers follow from the orchestration queue.
      assert.equal((await control.request('GET', `/agents/${created.id}`, { token })).status, 404);
      await waitFor('the replicas removed', async () => ((await driver.replicasLeft(control, created.id)) === 0 ? true : undefined));
      await waitFor('what the agent owned removed', async () => ((await driver.leftovers(control, created.id)).length === 0 ? true : undefined));
    });
  });
}
