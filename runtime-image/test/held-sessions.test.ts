import assert from 'node:assert/strict';
import { HeldSessions } from '../src/held-sessions.js';

/** What a replica keeps of the sessions it wrote: a bounded cache, least recently used out first. */
describe('HeldSessions', () => {
  const session = (version: number) => ({ version, tag: `"${version}.1"`, messages: [`m${version}`] });

  it('gives back what it holds, and forgets the least recently used past maxSessions', () => {
    const held = new HeldSessions<string>({ maxSessions: 2, maxBytes: 1_000 });
    held.hold('a', session(1), 10);
    held.hold('b', session(2), 10);
    assert.deepEqual(held.get('a'), session(1), 'a is now the most recently used');
    held.hold('c', session(3), 10);
    assert.equal(held.get('b'), undefined, 'b, the least recently used, went');
    assert.deepEqual(held.get('a'), session(1));
    assert.deepEqual(held.get('c'), session(3));
    assert.equal(held.size, 2);
  });

  it('keeps the bytes it holds within maxBytes, counting a session held again once', () => {
    const held = new HeldSessions<string>({ maxSessions: 10, maxBytes: 100 });
    held.hold('a', session(1), 40);
    held.hold('a', session(2), 40);
    held.hold('b', session(3), 40);
    assert.equal(held.size, 2, 'a held twice takes its bytes once');
    held.hold('c', session(4), 40);
    assert.equal(held.get('a'), undefined, '120 bytes would pass 100: the oldest goes');
    assert.equal(held.size, 2);
  });

  it('holds no session without an ETag, nor one larger than all it may hold, and forgets the one it held under that id', () => {
    const held = new HeldSessions<string>({ maxSessions: 10, maxBytes: 100 });
    held.hold('a', session(1), 10);
    held.hold('a', { version: 2, messages: ['m2'] }, 10);
    assert.equal(held.get('a'), undefined, 'a stale copy is not kept in its place');
    held.hold('b', session(3), 101);
    assert.equal(held.get('b'), undefined);
    assert.equal(held.size, 0);
  });
});
