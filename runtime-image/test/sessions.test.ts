import assert from 'node:assert/strict';
import { KeyedLock } from '../src/keyed-lock.js';
import { MemorySessionStore, type SessionLimits } from '../src/memory-session-store.js';
import { FakeProvider } from './helpers/fake-provider.js';
import { ManualClock, platformEnv, postInvoke, startRuntime } from './helpers/runtime.js';

const HOUR = 3_600_000;
const LIMITS: SessionLimits = { idleTtlMs: HOUR, maxSessions: 3, maxTurnsPerSession: 2, historyBudgetChars: 1_000_000 };

const turn = (text: string) => [`user: ${text}`, `assistant: re ${text}`];

describe('session store', () => {
  it('forgets a session idle for longer than the TTL', () => {
    const clock = new ManualClock();
    const store = new MemorySessionStore<string>(LIMITS, clock);
    store.appendTurn('a', turn('one'));
    clock.advance(HOUR - 1);
    assert.deepEqual(store.history('a'), turn('one'), 'still there just before the TTL');
    clock.advance(HOUR - 1);
    assert.deepEqual(store.history('a'), turn('one'), 'reading it counted as use');
    clock.advance(HOUR);
    assert.deepEqual(store.history('a'), []);
    assert.equal(store.size, 0);
  });

  it('drops expired sessions even when they are never asked for again', () => {
    const clock = new ManualClock();
    const store = new MemorySessionStore<string>(LIMITS, clock);
    store.appendTurn('a', turn('one'));
    store.appendTurn('b', turn('two'));
    clock.advance(HOUR + 1);
    store.appendTurn('c', turn('three'));
    assert.equal(store.size, 1);
  });

  it('evicts the least recently used session past the cap', () => {
    const store = new MemorySessionStore<string>(LIMITS, new ManualClock());
    store.appendTurn('a', turn('a'));
    store.appendTurn('b', turn('b'));
    store.appendTurn('c', turn('c'));
    store.history('a'); // a is now more recent than b
    store.appendTurn('d', turn('d'));
    assert.equal(store.size, 3);
    assert.deepEqual(store.history('b'), [], 'b was the least recently used');
    assert.deepEqual(store.history('a'), turn('a'));
  });

  it('trims the oldest turns past the per-session limit', () => {
    const store = new MemorySessionStore<string>(LIMITS, new ManualClock());
    store.appendTurn('a', turn('one'));
    store.appendTurn('a', turn('two'));
    store.appendTurn('a', turn('three'));
    assert.deepEqual(store.history('a'), [...turn('two'), ...turn('three')]);
  });

  it('stays within the character budget, evicting others first and then trimming the session itself', () => {
    const store = new MemorySessionStore<string>({ ...LIMITS, maxTurnsPerSession: 100, historyBudgetChars: 200 }, new ManualClock());
    store.appendTurn('a', ['x'.repeat(90)]);
    store.appendTurn('b', ['y'.repeat(90)]);
    store.appendTurn('b', ['z'.repeat(90)]);
    assert.deepEqual(store.history('a'), [], 'a gave way to b');
    assert.deepEqual(store.history('b'), ['y'.repeat(90), 'z'.repeat(90)]);
    store.appendTurn('b', ['w'.repeat(90)]);
    assert.deepEqual(store.history('b'), ['z'.repeat(90), 'w'.repeat(90)]);
    assert.ok(store.historyChars <= 200);
  });

  it('keeps memory flat under many sessions', () => {
    const store = new MemorySessionStore<string>({ ...LIMITS, maxSessions: 100 }, new ManualClock());
    for (let i = 0; i < 10_000; i++) store.appendTurn(`s${i}`, turn(String(i)));
    assert.equal(store.size, 100);
  });
});

describe('keyed lock', () => {
  it('runs tasks of one key one at a time, in order, and tasks of different keys together', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));

    const first = lock.run('k', async () => {
      events.push('start k1');
      await gate; // only the task of the other key opens it, so that one must not wait
      events.push('end k1');
    });
    const second = lock.run('k', async () => {
      events.push('start k2');
    });
    const other = lock.run('other', async () => {
      events.push('other');
      openGate();
    });
    await Promise.all([first, second, other]);

    assert.deepEqual(events, ['start k1', 'other', 'end k1', 'start k2']);
    assert.equal(lock.activeKeys, 0, 'idle keys are released');
  });

  it('releases the key when a task fails', async () => {
    const lock = new KeyedLock();
    await assert.rejects(lock.run('k', async () => Promise.reject(new Error('boom'))));
    assert.equal(await lock.run('k', async () => 'next'), 'next');
  });
});

describe('session bounds through /invoke', () => {
  let fake: FakeProvider;
  before(async () => {
    fake = await FakeProvider.start();
  });
  afterEach(() => fake.reset());
  after(() => fake.close());

  it('starts over once RUNTIME_SESSION_TTL_SECONDS have passed without use', async () => {
    const clock = new ManualClock();
    const runtime = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_SESSION_TTL_SECONDS: '60' }), { clock });
    try {
      const first = await postInvoke(runtime.url, { input: 'remember me' });
      clock.advance(61_000);
      await postInvoke(runtime.url, { input: 'do you?', session_id: first.body.session_id });
      assert.deepEqual(fake.requests[1]!.body.messages.slice(1), [{ role: 'user', content: 'do you?' }]);
    } finally {
      await runtime.close();
    }
  });

  it('forgets the least recently used conversation past RUNTIME_MAX_SESSIONS', async () => {
    const runtime = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_MAX_SESSIONS: '2' }));
    try {
      await postInvoke(runtime.url, { input: 'a1', session_id: 'a' });
      await postInvoke(runtime.url, { input: 'b1', session_id: 'b' });
      await postInvoke(runtime.url, { input: 'c1', session_id: 'c' });
      await postInvoke(runtime.url, { input: 'a2', session_id: 'a' });
      assert.ok(runtime.sessions instanceof MemorySessionStore);
      assert.equal(runtime.sessions.size, 2);
      assert.deepEqual(fake.requests[3]!.body.messages.slice(1), [{ role: 'user', content: 'a2' }]);
    } finally {
      await runtime.close();
    }
  });

  it('sends at most RUNTIME_MAX_TURNS_PER_SESSION earlier turns', async () => {
    const runtime = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_MAX_TURNS_PER_SESSION: '2' }));
    try {
      for (const input of ['one', 'two', 'three', 'four']) await postInvoke(runtime.url, { input, session_id: 's' });
      const userTexts = fake.requests[3]!.body.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
      assert.deepEqual(userTexts, ['two', 'three', 'four']);
    } finally {
      await runtime.close();
    }
  });
});
