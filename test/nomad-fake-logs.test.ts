import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveLogs } from './support/fake-nomad/fs-logs.js';
import { LogFiles } from './support/fake-nomad/log-files.js';
import { logsImpl, type LogsRequest } from './support/fake-nomad/log-walk.js';
import { StreamFramer, type StreamFrame } from './support/fake-nomad/stream-framer.js';
import { waitFor } from './support/wait.js';

/**
 * The fake's fs logs endpoint against Nomad's own rules (client/lib/streamframer/framer.go,
 * client/fs_endpoint.go, command/agent/fs_endpoint.go): what each frame holds, how rotated
 * files are walked, how offsets are clamped, and the HTTP parameters and their errors.
 */
const KIB = 1024;
const ALLOC = 'a1b2c3d4-0000-4000-8000-000000000001';

const framesOf = async (files: LogFiles, request: Partial<LogsRequest>, signal = new AbortController().signal) => {
  const frames: StreamFrame[] = [];
  const framer = new StreamFramer((frame) => frames.push(frame), 1_000, 200, 64 * KIB);
  framer.run();
  await logsImpl({ follow: false, offset: 0, origin: 'start', task: 'agent', logType: 'stdout', ...request }, files, ALLOC, framer, signal);
  framer.destroy();
  return frames;
};
const shape = (frames: StreamFrame[]) => frames.map((f) => ({ Offset: f.Offset, bytes: f.Data?.length ?? 0, File: f.File, FileEvent: f.FileEvent }));
const bytes = (size: number, fill = 'x') => Buffer.alloc(size, fill);

describe('the fake Nomad: the stream framer (framer.go)', () => {
  const collect = () => {
    const frames: StreamFrame[] = [];
    const framer = new StreamFramer((frame) => frames.push(frame), 60_000, 60_000, 64 * KIB);
    framer.run();
    return { frames, framer };
  };

  it('flushes a full 64 KiB frame whose Offset is where its data ends; the next frame\'s Offset runs 64 KiB ahead of its start', () => {
    const { frames, framer } = collect();
    framer.sendData('alloc/logs/agent.stdout.0', '', bytes(64 * KIB), 64 * KIB);
    framer.sendData('alloc/logs/agent.stdout.0', '', bytes(100), 64 * KIB + 100);
    framer.destroy();
    assert.deepEqual(shape(frames), [
      { Offset: 64 * KIB, bytes: 64 * KIB, File: 'alloc/logs/agent.stdout.0', FileEvent: '' },
      // Its data starts at 64 KiB: Offset - length would say 128 KiB - 100.
      { Offset: 128 * KIB, bytes: 100, File: 'alloc/logs/agent.stdout.0', FileEvent: '' },
    ]);
  });

  it('keeps the first Send\'s Offset when later Sends merge into the frame, and flushes when the file changes', () => {
    const { frames, framer } = collect();
    framer.sendData('alloc/logs/agent.stdout.0', '', bytes(10), 10);
    framer.sendData('alloc/logs/agent.stdout.0', '', bytes(20), 30);
    framer.sendData('alloc/logs/agent.stdout.1', '', bytes(5), 5);
    framer.destroy();
    assert.deepEqual(shape(frames), [
      { Offset: 10, bytes: 30, File: 'alloc/logs/agent.stdout.0', FileEvent: '' },
      { Offset: 5, bytes: 5, File: 'alloc/logs/agent.stdout.1', FileEvent: '' },
    ]);
  });

  it('sends an event without data at once ("Handle the delete case")', () => {
    const { frames, framer } = collect();
    framer.sendData('alloc/logs/agent.stdout.0', 'file deleted', Buffer.alloc(0), 42);
    assert.deepEqual(shape(frames), [{ Offset: 42, bytes: 0, File: 'alloc/logs/agent.stdout.0', FileEvent: 'file deleted' }]);
    framer.destroy();
  });
});

describe('the fake Nomad: walking rotated log files (fs_endpoint.go logsImpl, findClosest)', () => {
  let files: LogFiles;
  beforeEach(() => {
    files = new LogFiles();
    files.append(ALLOC, 'agent', 'stdout', bytes(100 * KIB, 'a'));
    files.rotate(ALLOC, 'agent', 'stdout');
    files.append(ALLOC, 'agent', 'stdout', bytes(10 * KIB, 'b'));
  });

  it('reads every file from the oldest, each frame naming its file, offsets restarting per file', async () => {
    assert.deepEqual(shape(await framesOf(files, {})), [
      { Offset: 64 * KIB, bytes: 64 * KIB, File: 'alloc/logs/agent.stdout.0', FileEvent: '' },
      { Offset: 128 * KIB, bytes: 36 * KIB, File: 'alloc/logs/agent.stdout.0', FileEvent: '' },
      { Offset: 10 * KIB, bytes: 10 * KIB, File: 'alloc/logs/agent.stdout.1', FileEvent: '' },
    ]);
  });

  it('counts origin=end back across files', async () => {
    // 20 KiB from the end: the last 10 KiB of .0 (from 90 KiB), then .1.
    assert.deepEqual(shape(await framesOf(files, { origin: 'end', offset: 20 * KIB })), [
      { Offset: 100 * KIB, bytes: 10 * KIB, File: 'alloc/logs/agent.stdout.0', FileEvent: '' },
      { Offset: 10 * KIB, bytes: 10 * KIB, File: 'alloc/logs/agent.stdout.1', FileEvent: '' },
    ]);
  });

  it('reads the newest file from its start for origin=end with offset 0 (findClosest stops at offset 0)', async () => {
    assert.deepEqual(shape(await framesOf(files, { origin: 'end', offset: 0 })), [{ Offset: 10 * KIB, bytes: 10 * KIB, File: 'alloc/logs/agent.stdout.1', FileEvent: '' }]);
  });

  it('clamps an offset past the end instead of refusing it', async () => {
    assert.equal((await framesOf(files, { origin: 'end', offset: 1_000 * KIB })).reduce((sum, f) => sum + (f.Data?.length ?? 0), 0), 110 * KIB, 'from the start of the oldest file');
    assert.deepEqual(await framesOf(files, { origin: 'start', offset: 1_000 * KIB }), [], 'at the end of the newest file: nothing to read');
  });

  it('follows into the next file once it appears, and stops when the reader goes', async () => {
    const frames: StreamFrame[] = [];
    const framer = new StreamFramer((frame) => frames.push(frame), 50, 20, 64 * KIB);
    framer.run();
    const reader = new AbortController();
    const following = logsImpl({ follow: true, offset: 110 * KIB, origin: 'start', task: 'agent', logType: 'stdout' }, files, ALLOC, framer, reader.signal);
    files.append(ALLOC, 'agent', 'stdout', 'more\n');
    files.rotate(ALLOC, 'agent', 'stdout');
    files.append(ALLOC, 'agent', 'stdout', 'in two\n');
    await waitFor('the line of .2', async () => (frames.some((f) => f.File.endsWith('.2')) ? true : undefined), 5_000, 20);
    await waitFor('a heartbeat', async () => (frames.some((f) => f.File === '' && f.Data === null) ? true : undefined), 5_000, 20);
    reader.abort();
    await following;
    framer.destroy();
    const data = frames.filter((f) => f.Data).map((f) => ({ File: f.File, text: f.Data!.toString() }));
    assert.deepEqual(data, [
      { File: 'alloc/logs/agent.stdout.1', text: 'more\n' },
      { File: 'alloc/logs/agent.stdout.2', text: 'in two\n' },
    ]);
  });

  it('reports a followed file that is deleted with a "file deleted" event', async () => {
    const frames: StreamFrame[] = [];
    const framer = new StreamFramer((frame) => frames.push(frame), 60_000, 20, 64 * KIB);
    framer.run();
    const reader = new AbortController();
    const following = logsImpl({ follow: true, offset: 110 * KIB, origin: 'start', task: 'agent', logType: 'stdout' }, files, ALLOC, framer, reader.signal);
    files.remove(ALLOC, 'agent.stdout.1');
    await waitFor('the delete event', async () => (frames.some((f) => f.FileEvent === 'file deleted') ? true : undefined), 5_000, 20);
    reader.abort();
    await following;
    framer.destroy();
    assert.equal(frames.find((f) => f.FileEvent === 'file deleted')!.File, 'alloc/logs/agent.stdout.1');
  });
});

describe('the fake Nomad: GET /v1/client/fs/logs/:alloc (command/agent/fs_endpoint.go Logs)', () => {
  let server: Server;
  let address = '';
  const files = new LogFiles();
  const tasks: Record<string, Record<string, unknown>> = { agent: { StartedAt: '2031-01-01T00:00:00Z' }, sidecar: { StartedAt: null } };

  before(async () => {
    files.append(ALLOC, 'agent', 'stdout', 'one\ntwo\n');
    const host = { logs: files, allocation: (id: string) => (id === ALLOC ? { TaskStates: tasks } : undefined) };
    server = createServer((request, response) => {
      const url = new URL(request.url!, 'http://nomad');
      void serveLogs(host, decodeURIComponent(url.pathname.replace('/v1/client/fs/logs/', '')), url.searchParams, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  const get = async (alloc: string, query: string) => {
    const response = await fetch(`${address}/v1/client/fs/logs/${alloc}?${query}`);
    return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
  };

  it('answers frames back to back, as JSON with base64 data', async () => {
    const answer = await get(ALLOC, 'task=agent&type=stdout');
    assert.equal(answer.status, 200);
    assert.equal(answer.type, 'application/json');
    assert.equal(answer.text, JSON.stringify({ Offset: 8, Data: Buffer.from('one\ntwo\n').toString('base64'), File: 'alloc/logs/agent.stdout.0' }));
  });

  it('answers the bytes alone with plain=true', async () => {
    const answer = await get(ALLOC, 'task=agent&type=stdout&plain=true&origin=end&offset=4');
    assert.deepEqual(answer, { status: 200, type: 'text/plain', text: 'two\n' });
  });

  it('refuses bad parameters with Nomad\'s statuses and messages', async () => {
    const cases: [string, string, number, string][] = [
      [ALLOC, 'type=stdout', 400, 'must provide task name'],
      [ALLOC, 'task=agent&type=stdout&follow=yes', 400, 'failed to parse follow field to boolean: strconv.ParseBool: parsing "yes": invalid syntax'],
      [ALLOC, 'task=agent&type=both', 400, 'must provide log type (stdout/stderr)'],
      [ALLOC, 'task=agent&type=stdout&offset=1k', 400, 'error parsing offset: strconv.ParseInt: parsing "1k": invalid syntax'],
      [ALLOC, 'task=agent&type=stdout&origin=middle', 400, 'origin must be start or end'],
      ['no-such-alloc', 'task=agent&type=stdout', 404, 'Unknown allocation "no-such-alloc"'],
      [ALLOC, 'task=web&type=stdout', 400, 'unknown task name "web"'],
      [ALLOC, 'task=sidecar&type=stdout', 404, 'task "sidecar" not started yet. No logs available'],
      [ALLOC, 'task=agent&type=stderr', 404, 'log entry for task "agent" and log type "stderr" not found'],
    ];
    for (const [alloc, query, status, text] of cases) {
      const answer = await get(alloc, query);
      assert.deepEqual({ status: answer.status, text: answer.text }, { status, text }, query);
    }
  });
});
