import assert from 'node:assert/strict';
import pino from 'pino';
import type { ManualClock } from './support/manual-clock.js';
import { systemClock } from '../contract/clock.js';
import { repositoriesOn } from '../control/repositories/index.js';
import { ReplicaMeter } from '../control/services/replica-meter.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { waitFor } from './support/wait.js';

const logger = pino({ level: 'silent' });

async function createAgent(control: TestControl, token: string, deploy: Record<string, unknown>) {
  const created = await control.request('POST', '/agents', { token, body: { name: 'metered', api_key: 'sk-test', deploy } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as { id: string; account_id?: string };
}

describe('account usage: replica time', function () {
  this.timeout(180_000);

  describe('period figures from intervals (fixed clock)', function () {
    let control: TestControl;
    before(async () => {
      control = await startControl();
    });
    after(async () => control?.close());

    async function interval(accountId: string, agentId: string, replicaId: string, from: string, to: string | null, cpu: number, memoryMb: number) {
      await control.db('replica_intervals').insert({
        account_id: accountId, agent_id: agentId, replica_id: replicaId, cpu, memory_mb: memoryMb,
        started_at: new Date(from), stopped_at: to ? new Date(to) : null, last_seen_at: new Date(to ?? from),
      });
    }

    it('splits an interval at the month boundary, counts an open one up to now, and keeps 4 decimals', async () => {
      const { token, user } = await control.signUp();
      const accountId: string = user.account_id;
      const agent = await createAgent(control, token, { replicas: 1 });
      // 23:30 on the last day of October to 00:30 on 1 November: only the November half counts.
      await interval(accountId, agent.id, 'r-across', '2026-10-31T23:30:00Z', '2026-11-01T00:30:00Z', 0.5, 512);
      // Wholly in October: not in November's period.
      await interval(accountId, agent.id, 'r-october', '2026-10-10T00:00:00Z', '2026-10-10T05:00:00Z', 1, 1024);
      // Still running, started a minute before "now".
      await interval(accountId, agent.id, 'r-open', '2026-11-01T00:59:00Z', null, 0.5, 512);
      (control.clock as ManualClock).set(new Date('2026-11-01T01:00:00Z'));

      const usage = await control.request('GET', '/account/usage', { token });
      assert.equal(usage.status, 200);
      assert.equal(usage.body.period.start, '2026-11-01T00:00:00.000Z');
      // 0.5 h + 1 min = 0.5167 replica-hours; × 0.5 vCPU; × 512/1024 GB.
      assert.deepEqual(
        { replica_hours: usage.body.period.replica_hours, vcpu_hours: usage.body.period.vcpu_hours, memory_gb_hours: usage.body.period.memory_gb_hours },
        { replica_hours: 0.5167, vcpu_hours: 0.2583, memory_gb_hours: 0.2583 },
      );
    });

    it('shows a replica that ran one minute as about 0.0167 replica-hours, not 0', async () => {
      const { token, user } = await control.signUp();
      const accountId: string = user.account_id;
      const agent = await createAgent(control, token, { replicas: 1 });
      await interval(accountId, agent.id, 'r-minute', '2026-11-01T00:10:00Z', '2026-11-01T00:11:00Z', 1, 2048);
      (control.clock as ManualClock).set(new Date('2026-11-01T01:30:00Z'));
      const { period } = (await control.request('GET', '/account/usage', { token })).body;
      assert.equal(period.replica_hours, 0.0167);
      assert.equal(period.vcpu_hours, 0.0167);
      assert.equal(period.memory_gb_hours, 0.0333);
    });

    it('keeps what a deleted agent used in the period', async () => {
      const { token, user } = await control.signUp();
      const accountId: string = user.account_id;
      const agent = await createAgent(control, token, { replicas: 1 });
      await interval(accountId, agent.id, 'r-deleted', '2026-11-01T00:00:00Z', '2026-11-01T01:00:00Z', 1, 1024);
      assert.equal((await control.request('DELETE', `/agents/${agent.id}`, { token })).status, 204);
      (control.clock as ManualClock).set(new Date('2026-11-01T02:00:00Z'));
      assert.equal((await control.request('GET', '/account/usage', { token })).body.period.replica_hours, 1);
    });
  });

  describe('measured on real replicas (podman)', function () {
    let control: TestControl;
    let meter: ReplicaMeter;
    before(async () => {
      control = await startControl({}, { orchestrate: true });
    });
    after(async () => {
      await meter?.stop();
      await control?.close();
    });

    it('records a 2-replica agent\'s replica time within 1% of the wall clock', async () => {
      const { token } = await control.signUp();
      meter = new ReplicaMeter(control.db, control.driver!, systemClock, 1_000, logger);
      await meter.start();
      const agent = await createAgent(control, token, { replicas: 2 });

      // The wall clock of each replica, as the driver reports it to anyone asking.
      const runningSince = new Map<string, number>();
      const stoppedAt = new Map<string, number>();
      const observe = async () => {
        const status = await control.driver!.status(agent.id);
        const running = new Set((status?.replicas ?? []).filter((r) => r.state === 'running').map((r) => r.id));
        const now = Date.now();
        for (const id of running) if (!runningSince.has(id)) runningSince.set(id, now);
        for (const id of runningSince.keys()) if (!running.has(id) && !stoppedAt.has(id)) stoppedAt.set(id, now);
        return running.size;
      };
      // Watched all along, also while the scale request is in flight (it returns once the replicas are stopping).
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          await observe().catch(() => undefined);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      await waitFor('two running replicas', async () => (runningSince.size === 2 ? true : undefined), 90_000, 50);
      await waitFor('25 s of running', async () => (Date.now() - Math.max(...runningSince.values()) > 25_000 ? true : undefined), 60_000, 200);
      const scaled = await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'down', count: 2 } });
      assert.equal(scaled.status, 200, JSON.stringify(scaled.body));
      await waitFor('both replicas stopped', async () => (stoppedAt.size === 2 ? true : undefined), 60_000, 50);
      watching = false;
      await watcher;
      await waitFor('both intervals closed', async () => {
        const open = await control.db('replica_intervals').where({ agent_id: agent.id }).whereNull('stopped_at');
        return open.length === 0 ? true : undefined;
      });

      const wallSeconds = [...runningSince.keys()].reduce((sum, id) => sum + (stoppedAt.get(id)! - runningSince.get(id)!) / 1000, 0);
      const rows = await control.db('replica_intervals').where({ agent_id: agent.id });
      assert.equal(rows.length, 2, 'one interval per replica');
      const meteredSeconds = rows.reduce((sum, row) => sum + (row.stopped_at.getTime() - row.started_at.getTime()) / 1000, 0);
      assert.ok(Math.abs(meteredSeconds - wallSeconds) / wallSeconds < 0.01, `metered ${meteredSeconds} s, wall clock ${wallSeconds} s ${JSON.stringify({ rows, runningSince: [...runningSince], stoppedAt: [...stoppedAt] })}`);

      (control.clock as ManualClock).set(new Date()); // the API's clock stands still in tests; the meter ran on the wall clock
      const usage = (await control.request('GET', '/account/usage', { token })).body;
      assert.ok(Math.abs(usage.period.replica_hours - wallSeconds / 3600) <= 0.0001 + (wallSeconds / 3600) * 0.01, JSON.stringify(usage.period));
    });

    it('closes an interval a crash left open at the replica\'s last sighting, not at restart', async () => {
      const { token, user } = await control.signUp();
      const accountId: string = user.account_id;
      const agent = await createAgent(control, token, { replicas: 1 });
      // As a control API that crashed while metering a replica that has since gone would leave it.
      const lastSeen = new Date(Date.now() - 120_000);
      await control.db('replica_intervals').insert({
        account_id: accountId, agent_id: agent.id, replica_id: 'replica-gone', cpu: 1, memory_mb: 1024,
        started_at: new Date(lastSeen.getTime() - 600_000), stopped_at: null, last_seen_at: lastSeen,
      });
      const restarted = new ReplicaMeter(control.db, control.driver!, systemClock, 60_000, logger);
      await restarted.start();
      await restarted.stop();
      const row = await control.db('replica_intervals').where({ replica_id: 'replica-gone' }).first();
      assert.equal(row.stopped_at.toISOString(), lastSeen.toISOString());
      // The agent's real replica is metered from now on, in an interval of its own.
      await waitFor('the real replica metered', async () => {
        await restarted.pass();
        return (await repositoriesOn(control.db).usage.openReplicaIds(agent.id)).length === 1 ? true : undefined;
      }, 90_000, 500);
    });
  });
});
