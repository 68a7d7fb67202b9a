import assert from 'node:assert/strict';
import { backoffMs, fullJitter, NO_JITTER, retry, type FailureKind } from '../contract/backoff.js';

describe('backoff (contract/backoff.ts)', () => {
  const backoff = { baseMs: 1000, maxMs: 30_000 };

  it('doubles the ceiling from the base up to the cap: exactly without jitter, a draw below it with full jitter', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((retry) => backoffMs(backoff, retry, NO_JITTER)), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    assert.deepEqual([0, 0.5, 0.999].map((draw) => backoffMs(backoff, 3, fullJitter(() => draw))), [0, 2000, 3996]);
    for (let i = 0; i < 1000; i++) {
      const wait = backoffMs(backoff, 1 + (i % 8));
      assert.ok(wait >= 0 && wait < 30_000 && Number.isInteger(wait), String(wait));
    }
  });

  it('stays at the cap however many retries, and at 0 for a zero base', () => {
    assert.equal(backoffMs(backoff, 10_000, NO_JITTER), 30_000);
    assert.equal(backoffMs({ baseMs: 0, maxMs: 30_000 }, 10_000, NO_JITTER), 0);
  });

  describe('retry', () => {
    const failing = (kinds: FailureKind[]) => {
      const calls: number[] = [];
      const attempt = async () => {
        calls.push(calls.length + 1);
        const kind = kinds[calls.length - 1];
        if (kind === undefined) return 'done';
        throw Object.assign(new Error(`failure ${calls.length}`), { kind });
      };
      return { calls, attempt };
    };
    const options = { attempts: 3, backoff: { baseMs: 1, maxMs: 5 }, classify: (error: unknown) => (error as { kind: FailureKind }).kind };

    it('tries again after transient failures and returns the first success', async () => {
      const { calls, attempt } = failing(['transient', 'transient']);
      assert.equal(await retry(attempt, options), 'done');
      assert.deepEqual(calls, [1, 2, 3]);
    });

    it('throws the last failure once the attempts are spent', async () => {
      const { calls, attempt } = failing(['transient', 'transient', 'transient', 'transient']);
      await assert.rejects(retry(attempt, options), /failure 3/);
      assert.equal(calls.length, 3);
    });

    it('gives up at once on a permanent failure', async () => {
      const { calls, attempt } = failing(['transient', 'permanent', 'transient']);
      await assert.rejects(retry(attempt, options), /failure 2/);
      assert.equal(calls.length, 2);
    });

    it("ends a wait when the caller's signal aborts, throwing its reason", async () => {
      const { calls, attempt } = failing(['transient', 'transient']);
      const abort = new AbortController();
      const started = Date.now();
      setTimeout(() => abort.abort(new Error('caller gone')), 20);
      await assert.rejects(retry(attempt, { ...options, backoff: { baseMs: 60_000, maxMs: 60_000 }, jitter: NO_JITTER, signal: abort.signal }), /caller gone/);
      assert.equal(calls.length, 1);
      assert.ok(Date.now() - started < 5_000);
    });
  });
});
