import assert from 'node:assert/strict';
import { StatementBatches } from '../control/db/statement-batches.js';

/** A statement run by hand: each batch it was given, answered when the test says so. */
function heldStatement() {
  const batches: { calls: number[]; answer: (results: string[]) => void; fail: (error: Error) => void }[] = [];
  const run = (calls: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push({ calls, answer: resolve, fail: reject });
    });
  return { batches, run };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('statement batches', () => {
  it('sends a lone call once the calls made with it are in, and calls made while the batches in flight run together in the next, each answered with its own result', async () => {
    const statement = heldStatement();
    const batches = new StatementBatches(statement.run, { maxInFlight: 1, maxCalls: 100, maxWeight: 1000 });
    const first = batches.submit(1);
    await settle();
    assert.deepEqual(statement.batches.map((batch) => batch.calls), [[1]]);
    const waiting = [2, 3, 4].map((call) => batches.submit(call));
    await settle();
    assert.equal(statement.batches.length, 1, 'a call went while a batch was in flight');

    statement.batches[0]!.answer(['one']);
    assert.equal(await first, 'one');
    await settle();
    assert.deepEqual(statement.batches.map((batch) => batch.calls), [[1], [2, 3, 4]]);
    statement.batches[1]!.answer(['two', 'three', 'four']);
    assert.deepEqual(await Promise.all(waiting), ['two', 'three', 'four']);
  });

  it('sends calls made together, each a few awaits deep (the calls of one POST /v1/batch), as one batch, though another could have gone at once', async () => {
    const statement = heldStatement();
    const batches = new StatementBatches(statement.run, { maxInFlight: 2, maxCalls: 100, maxWeight: 1000 });
    const afterAwaits = async (call: number, depth: number) => {
      for (let step = 0; step < depth; step += 1) await Promise.resolve();
      return batches.submit(call);
    };
    const calls = [1, 2, 3, 4].map((call) => afterAwaits(call, call * 3));
    await settle();
    assert.deepEqual(statement.batches.map((batch) => batch.calls), [[1, 2, 3, 4]]);
    statement.batches[0]!.answer(['a', 'b', 'c', 'd']);
    assert.deepEqual(await Promise.all(calls), ['a', 'b', 'c', 'd']);
  });

  it('runs up to maxInFlight batches at once', async () => {
    const statement = heldStatement();
    const batches = new StatementBatches(statement.run, { maxInFlight: 2, maxCalls: 100, maxWeight: 1000 });
    const calls = [batches.submit(1)];
    await settle();
    calls.push(batches.submit(2));
    await settle();
    calls.push(batches.submit(3), batches.submit(4));
    await settle();
    assert.deepEqual(statement.batches.map((batch) => batch.calls), [[1], [2]]);
    statement.batches[1]!.answer(['b']);
    await settle();
    assert.deepEqual(statement.batches.map((batch) => batch.calls), [[1], [2], [3, 4]]);
    statement.batches[0]!.answer(['a']);
    statement.batches[2]!.answer(['c', 'd']);
    assert.deepEqual(await Promise.all(calls), ['a', 'b', 'c', 'd']);
  });

  it('fails every call of a batch whose statement fails, and goes on with the next', async () => {
    const statement = heldStatement();
    const batches = new StatementBatches(statement.run, { maxInFlight: 1, maxCalls: 100, maxWeight: 1000 });
    const first = batches.submit(1);
    await settle();
    const failed = [batches.submit(2), batches.submit(3)];
    await settle();
    statement.batches[0]!.answer(['one']);
    await first;
    await settle();
    statement.batches[1]!.fail(new Error('connection lost'));
    for (const call of failed) await assert.rejects(call, /connection lost/);
    const after = batches.submit(4);
    await settle();
    statement.batches[2]!.answer(['four']);
    assert.equal(await after, 'four');
  });

  it('fails the calls of a batch answered with a result missing, rather than give one call another\'s', async () => {
    const statement = heldStatement();
    const batches = new StatementBatches(statement.run, { maxInFlight: 1, maxCalls: 100, maxWeight: 1000 });
    const call = batches.submit(1);
    await settle();
    statement.batches[0]!.answer([]);
    await assert.rejects(call, /a batch of 1 calls was answered with 0 results/);
  });

  it('keeps a batch within maxCalls and maxWeight, a call heavier than maxWeight going alone', async () => {
    const statement = heldStatement();
    const batches = new StatementBatches(statement.run, { maxInFlight: 1, maxCalls: 3, maxWeight: 10 }, (call: number) => call);
    const calls = [batches.submit(1)];
    await settle();
    calls.push(...[1, 1, 1, 1, 6, 5, 20, 2].map((call) => batches.submit(call)));
    for (let answered = 0; answered < 6; answered += 1) {
      await settle();
      const batch = statement.batches[answered];
      if (!batch) break;
      batch.answer(batch.calls.map(String));
    }
    assert.deepEqual(statement.batches.map((batch) => batch.calls), [[1], [1, 1, 1], [1, 6], [5], [20], [2]]);
    assert.deepEqual(await Promise.all(calls), ['1', '1', '1', '1', '1', '6', '5', '20', '2']);
  });
});
