import assert from 'node:assert/strict';
import { sessionWithTurn, sessionWithTurnTrimmingAhead } from '../src/session-trim.js';

interface Message {
  role: 'user' | 'assistant' | 'tool';
  text: string;
}

const user = (text: string): Message => ({ role: 'user', text });
const assistant = (text: string): Message => ({ role: 'assistant', text });
const tool = (text: string): Message => ({ role: 'tool', text });
const startsTurn = (message: Message) => message.role === 'user';
const bytes = (messages: unknown[]) => Buffer.byteLength(JSON.stringify(messages));
const UNBOUNDED = { maxBytes: 1_000_000, maxTurns: 1000 };

describe('sessionWithTurn', () => {
  const history = [user('one'), assistant('call'), tool('result'), assistant('1'), user('two'), assistant('2'), user('three'), assistant('3')];
  const turn = [user('four'), assistant('4')];

  it('adds the turn to a history within the bounds, dropping nothing', () => {
    const next = sessionWithTurn(history, turn, UNBOUNDED, startsTurn)!;
    assert.deepEqual(next.messages, [...history, ...turn]);
    assert.equal(next.dropped, 0);
    assert.equal(next.bytes, bytes(next.messages), 'measured as the JSON array agent services store');
  });

  it('drops whole oldest turns, a tool result with the call it answers, until the bytes fit', () => {
    const maxBytes = bytes([...history.slice(4), ...turn]);
    const next = sessionWithTurn(history, turn, { ...UNBOUNDED, maxBytes }, startsTurn)!;
    assert.deepEqual(next.messages, [user('two'), assistant('2'), user('three'), assistant('3'), ...turn]);
    assert.equal(next.dropped, 4);
    assert.equal(next.bytes, maxBytes);
  });

  it('drops one turn more when a byte is missing', () => {
    const maxBytes = bytes([...history.slice(4), ...turn]) - 1;
    const next = sessionWithTurn(history, turn, { ...UNBOUNDED, maxBytes }, startsTurn)!;
    assert.deepEqual(next.messages, [user('three'), assistant('3'), ...turn]);
  });

  it('keeps at most maxTurns turns, the new one included', () => {
    const next = sessionWithTurn(history, turn, { ...UNBOUNDED, maxTurns: 2 }, startsTurn)!;
    assert.deepEqual(next.messages, [user('three'), assistant('3'), ...turn]);
  });

  it('keeps the turn alone when nothing else fits', () => {
    const next = sessionWithTurn(history, turn, { ...UNBOUNDED, maxBytes: bytes(turn) }, startsTurn)!;
    assert.deepEqual(next.messages, turn);
    assert.equal(next.dropped, history.length);
  });

  it('gives up when the turn alone is larger than maxBytes', () => {
    assert.equal(sessionWithTurn(history, turn, { ...UNBOUNDED, maxBytes: bytes(turn) - 1 }, startsTurn), undefined);
    assert.equal(sessionWithTurn([], turn, { ...UNBOUNDED, maxBytes: bytes(turn) - 1 }, startsTurn), undefined);
  });

  it('counts messages before the first user message as a turn of their own', () => {
    const odd = [assistant('greeting'), user('one'), assistant('1')];
    const next = sessionWithTurn(odd, turn, { ...UNBOUNDED, maxTurns: 2 }, startsTurn)!;
    assert.deepEqual(next.messages, [user('one'), assistant('1'), ...turn]);
  });

  it('sizes each message once, so a turn costs the same however long the history it follows', () => {
    let sized = 0;
    // JSON.stringify calls toJSON once each time it sizes the message.
    const counted = (message: Message) => ({ ...message, toJSON: () => (sized++, message) });
    let session: Message[] = history.map(counted);
    for (const [number, text] of ['four', 'five', 'six'].entries()) {
      const next = sessionWithTurn(session, [counted(user(text)), counted(assistant(text))], UNBOUNDED, startsTurn)!;
      assert.equal(sized, history.length + 2 * (number + 1), `after turn ${text}: the history once, then only each turn's own messages`);
      const sizedByTurns = sized;
      assert.equal(next.bytes, bytes(next.messages), 'and still measured as the JSON array agent services store');
      sized = sizedByTurns; // the check's own stringify is not the turn's
      session = next.messages;
    }
  });

  it('starts an empty session with the turn', () => {
    const next = sessionWithTurn([], turn, UNBOUNDED, startsTurn)!;
    assert.deepEqual(next.messages, turn);
    assert.equal(next.bytes, bytes(turn));
  });
});

describe('sessionWithTurnTrimmingAhead', () => {
  const turns = (count: number) => Array.from({ length: count }, (_, n) => [user(`u${n}`), assistant(`a${n}`)]).flat();

  it('drops nothing while the turn fits, exactly as sessionWithTurn', () => {
    const next = sessionWithTurnTrimmingAhead(turns(7), turns(1), { ...UNBOUNDED, maxTurns: 8 }, startsTurn)!;
    assert.equal(next.dropped, 0);
  });

  it('once it must drop, keeps 3/4 of maxTurns, so the next turns are appended again', () => {
    const next = sessionWithTurnTrimmingAhead(turns(8), [user('new'), assistant('new')], { ...UNBOUNDED, maxTurns: 8 }, startsTurn)!;
    assert.equal(next.messages.length / 2, 6, 'six turns kept, the new one included');
    assert.deepEqual(next.messages.slice(0, 2), [user('u3'), assistant('a3')]);
    assert.equal(next.dropped, 6);
  });

  it('once it must drop bytes, keeps at most 3/4 of maxBytes', () => {
    const history = turns(20);
    const maxBytes = bytes(history);
    const next = sessionWithTurnTrimmingAhead(history, [user('new'), assistant('new')], { ...UNBOUNDED, maxBytes }, startsTurn)!;
    assert.ok(next.bytes <= Math.floor((maxBytes * 3) / 4), `${next.bytes} bytes kept of ${maxBytes}`);
    assert.ok(next.bytes > maxBytes / 2, 'no more than needed for that room');
  });

  it('trims only to the limit when the turn alone takes more than 3/4 of it', () => {
    const big = [user('x'.repeat(300)), assistant('y')];
    const maxBytes = bytes(big) + 20;
    const next = sessionWithTurnTrimmingAhead([user('a'), assistant('b')], big, { ...UNBOUNDED, maxBytes }, startsTurn)!;
    assert.deepEqual(next.messages, big);
  });
});
