import assert from 'node:assert/strict';
import pino from 'pino';
import { FairQueue, type Step } from '../control/services/fair-queue.js';
import { OrchestrationQueue } from '../control/services/orchestration-queue.js';

const step = (accountId: string, agentId: string, operation: Step['operation'] = 'run'): Step => ({ accountId, agentId, operation });

/** Takes until nothing may start, finishing each step at once when `finishing` (a queue with free slots). */
function drain(queue: FairQueue, finishing = true): string[] {
  const order: string[] = [];
  for (let next = queue.take(); next; next = queue.take()) {
    order.push(`${next.agentId}:${next.operation}`);
    if (finishing) queue.finish(next.agentId);
  }
  return order;
}

describe('orchestration queue: order of work (control/services/fair-queue.ts)', () => {
  it("serves accounts round-robin: one account's fifty waiting deploys hold another's one back by one turn", () => {
    const queue = new FairQueue(1);
    for (let i = 1; i <= 50; i += 1) queue.add(step('acct_a', `a${i}`));
    queue.add(step('acct_b', 'b1'));
    assert.deepEqual(drain(queue).slice(0, 4), ['a1:run', 'b1:run', 'a2:run', 'a3:run']);
  });

  it('alternates between accounts while both have work, in the order each account asked', () => {
    const queue = new FairQueue(1);
    for (const agent of ['a1', 'a2', 'a3']) queue.add(step('acct_a', agent));
    for (const agent of ['b1', 'b2']) queue.add(step('acct_b', agent));
    queue.add(step('acct_c', 'c1'));
    assert.deepEqual(drain(queue), ['a1:run', 'b1:run', 'c1:run', 'a2:run', 'b2:run', 'a3:run']);
  });

  it('keeps at most `limit` steps in flight; a finished one frees a slot', () => {
    const queue = new FairQueue(2);
    for (const agent of ['a1', 'a2', 'a3']) queue.add(step('acct_a', agent));
    assert.deepEqual(drain(queue, false), ['a1:run', 'a2:run']);
    assert.deepEqual(queue.size, { waiting: 1, inFlight: 2 });
    queue.finish('a1');
    assert.deepEqual(drain(queue, false), ['a3:run']);
  });

  it("starts an agent's next step only after its previous one finished, and lets other agents pass meanwhile", () => {
    const queue = new FairQueue(4);
    queue.add(step('acct_a', 'a1', 'run'));
    assert.deepEqual(drain(queue, false), ['a1:run']);
    queue.add(step('acct_a', 'a1', 'scale'));
    queue.add(step('acct_a', 'a2', 'run'));
    assert.deepEqual(drain(queue, false), ['a2:run'], 'a1 waits for its run');
    queue.finish('a1');
    assert.deepEqual(drain(queue, false), ['a1:scale']);
  });

  it('merges what waits for one agent into the strongest operation: remove over run over scale', () => {
    const queue = new FairQueue(1);
    queue.add(step('acct_a', 'a1', 'scale'));
    queue.add(step('acct_a', 'a1', 'run'));
    queue.add(step('acct_a', 'a1', 'scale'));
    queue.add(step('acct_a', 'a2', 'run'));
    queue.add(step('acct_a', 'a2', 'remove'));
    queue.add(step('acct_a', 'a2', 'run'));
    assert.deepEqual(drain(queue), ['a1:run', 'a2:remove']);
  });

  it('refuses a concurrency below one', () => {
    assert.throws(() => new FairQueue(0), /at least 1/);
  });
});

/** A step the test finishes by hand, standing in for a pull that takes as long as the test wants. */
interface Held {
  step: Step;
  finish: () => void;
  fail: (error: Error) => void;
}

describe('orchestration queue: running the work (control/services/orchestration-queue.ts)', () => {
  const logger = pino({ level: 'silent' });
  let started: Held[];
  let queue: OrchestrationQueue;
  const perform = (step: Step) =>
    new Promise<void>((resolve, reject) => started.push({ step, finish: resolve, fail: reject }));
  const startedAgents = () => started.map((held) => held.step.agentId);
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  beforeEach(() => {
    started = [];
    queue = new OrchestrationQueue(2, perform, logger);
  });

  it("starts another account's step while one account's steps hang, within the bound", async () => {
    for (let i = 1; i <= 6; i += 1) queue.enqueue(step('acct_stuck', `s${i}`));
    queue.enqueue(step('acct_other', 'o1'));
    await settle();
    assert.deepEqual(startedAgents(), ['s1', 's2'], 'two slots, both taken by the first account');
    started[0]!.finish();
    await settle();
    assert.deepEqual(startedAgents(), ['s1', 's2', 'o1'], "the other account's step goes next, ahead of s3..s6");
    assert.deepEqual(queue.size, { waiting: 4, inFlight: 2 });
  });

  it('goes on after a failed step and runs what waited for that agent', async () => {
    queue.enqueue(step('acct_a', 'a1', 'run'));
    await settle();
    queue.enqueue(step('acct_a', 'a1', 'remove'));
    started[0]!.fail(new Error('pull failed'));
    await settle();
    assert.deepEqual(started.map((held) => `${held.step.agentId}:${held.step.operation}`), ['a1:run', 'a1:remove']);
  });

  it('after close starts nothing more and waits for the steps in flight', async () => {
    queue.enqueue(step('acct_a', 'a1'));
    queue.enqueue(step('acct_a', 'a2'));
    queue.enqueue(step('acct_a', 'a3'));
    await settle();
    let closed = false;
    const closing = queue.close().then(() => (closed = true));
    started[0]!.finish();
    await settle();
    assert.equal(closed, false, 'a2 is still in flight');
    assert.deepEqual(startedAgents(), ['a1', 'a2'], 'a3 was not started');
    started[1]!.finish();
    await closing;
    queue.enqueue(step('acct_a', 'a4'));
    await settle();
    assert.deepEqual(startedAgents(), ['a1', 'a2']);
  });
});
