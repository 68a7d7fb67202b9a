import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { createRunningAgent, SseReader, type SseFrame } from './support/orch-helpers.js';

/**
 * An agent's log stream on Nomad (the fake cluster, whose fs logs endpoint frames output
 * as Nomad's client does), read through the control API as a user reads it: every line
 * once, in order, across a burst over 64 KiB and a log rotation, and a client resuming
 * with Last-Event-ID gets exactly the lines after that event.
 */
const lineText = (i: number) => `line ${String(i).padStart(5, '0')} `.padEnd(127, '.');
const linesFrom = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => lineText(from + k));
const block = (lines: string[]) => lines.map((line) => `${line}\n`).join('');

describe('agents on nomad (fake cluster): the log stream across a 64 KiB burst and a rotation', function () {
  this.timeout(180_000);
  let cluster: FakeCluster;
  let control: TestControl;
  const readers: SseReader[] = [];

  before(async () => {
    cluster = await startFakeCluster({});
    control = await startControl({}, { nomad: cluster });
  });
  afterEach(() => {
    for (const reader of readers.splice(0)) reader.close();
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
  });

  const openStream = async (agentId: string, token: string, lastEventId?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) };
    const reader = await SseReader.open(`${control.baseUrl}/agents/${agentId}/logs/stream?limit=1000`, headers);
    readers.push(reader);
    assert.equal(reader.status, 200);
    return reader;
  };
  const messageOf = (frame: SseFrame) => (frame.event === 'log' ? (JSON.parse(frame.data).message as string) : undefined);
  const logs = (reader: SseReader) => reader.frames.filter((frame) => frame.event === 'log');
  const until = (reader: SseReader, line: string) => reader.next(JSON.stringify(line.slice(0, 10)), (frame) => messageOf(frame) === line, 30_000);

  it('sends each line of a burst over 64 KiB once, in order, and a resumed stream exactly the lines after its id', async () => {
    const { token } = await control.signUp();
    const { id, replica } = await createRunningAgent(control, token);
    const burst = linesFrom(0, 768); // 96 KiB: a full 64 KiB frame, then the rest
    cluster.appendLog(replica.id, 'agent', 'stdout', block(burst));
    const stream = await openStream(id, token);
    await until(stream, burst.at(-1)!);
    // 160 KiB in all: the next reads start 128 KiB from the end, inside the first frame's data.
    const more = linesFrom(768, 1280);
    cluster.appendLog(replica.id, 'agent', 'stdout', block(more));
    await until(stream, more.at(-1)!);
    assert.deepEqual(logs(stream).map(messageOf), [...burst, ...more]);
    const ids = logs(stream).map((frame) => frame.id!);
    assert.equal(new Set(ids).size, ids.length, 'no two lines share an id');

    const resumed = await openStream(id, token, ids[600]);
    await until(resumed, more.at(-1)!);
    assert.deepEqual(logs(resumed).map(messageOf), [...burst, ...more].slice(601));
  });

  it('follows the log into its next file after a rotation, and a resumed stream gets exactly the lines after its id', async () => {
    const { token } = await control.signUp();
    const { id, replica } = await createRunningAgent(control, token);
    const before = linesFrom(0, 600);
    cluster.appendLog(replica.id, 'agent', 'stdout', block(before));
    const stream = await openStream(id, token);
    await until(stream, before.at(-1)!);
    cluster.rotateLog(replica.id, 'agent', 'stdout');
    const after = linesFrom(600, 900);
    cluster.appendLog(replica.id, 'agent', 'stdout', block(after));
    await until(stream, after.at(-1)!);
    assert.deepEqual(logs(stream).map(messageOf), [...before, ...after]);

    const ids = logs(stream).map((frame) => frame.id!);
    const resumed = await openStream(id, token, ids[500]);
    await until(resumed, after.at(-1)!);
    assert.deepEqual(logs(resumed).map(messageOf), [...before, ...after].slice(501));
  });
});
