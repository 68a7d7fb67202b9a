import assert from 'node:assert/strict';
import { FrameParser, LineAssembler, type LogLine } from '../control/orchestrator/nomad/log-frames.js';
import { toEntries } from '../control/orchestrator/nomad/logs.js';
import { LogFiles } from './support/fake-nomad/log-files.js';
import { logsImpl, type LogsRequest } from './support/fake-nomad/log-walk.js';
import { encodeFrame, StreamFramer } from './support/fake-nomad/stream-framer.js';

/**
 * Where the driver says each log line starts, read from the bytes Nomad's own framing
 * writes (ported in test/support/fake-nomad/: framer.go, fs_endpoint.go logsImpl). Lines
 * are 128 bytes, so a 64 KiB frame ends exactly at a line's end: a frame's Offset that
 * runs ahead of its data then shows in the next line's key.
 */
const KIB = 1024;
const ALLOC = 'f0e1d2c3-0000-4000-8000-000000000002';
const allocation = { ID: ALLOC, CreateTime: 1_900_000_000_000_000_000 };

const lineText = (i: number) => `line ${String(i).padStart(5, '0')} `.padEnd(127, '.');
const linesFrom = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => lineText(from + k));
const block = (lines: string[]) => lines.map((line) => `${line}\n`).join('');

/** The bytes of GET /v1/client/fs/logs for `request`, as a Nomad client frames them. */
async function wire(files: LogFiles, request: Partial<LogsRequest>): Promise<Buffer> {
  const frames: string[] = [];
  const framer = new StreamFramer((frame) => frames.push(encodeFrame(frame)), 60_000, 60_000, 64 * KIB);
  framer.run();
  await logsImpl({ follow: false, offset: 0, origin: 'start', task: 'agent', logType: 'stdout', ...request }, files, ALLOC, framer, new AbortController().signal);
  framer.destroy();
  return Buffer.from(frames.join(''));
}

/** The driver's reading of those bytes, fed in network-sized chunks. */
function read(bytes: Buffer, chunk = 1_500): LogLine[] {
  const parser = new FrameParser();
  const assembler = new LineAssembler();
  const lines: LogLine[] = [];
  for (let at = 0; at < bytes.length; at += chunk) for (const frame of parser.push(bytes.subarray(at, at + chunk))) lines.push(...assembler.push(frame));
  return [...lines, ...assembler.flush()];
}

const keyed = (lines: LogLine[]) => lines.map(({ file, offset, line }) => ({ file, offset, line }));

describe('nomad driver: where each log line starts (file, offset)', () => {
  it('keys every line of a log over 64 KiB by its real byte offset, past the full frame', async () => {
    const files = new LogFiles();
    const written = linesFrom(0, 768); // 96 KiB: one full frame, then 32 KiB
    files.append(ALLOC, 'agent', 'stdout', block(written));
    assert.deepEqual(keyed(read(await wire(files, {}))), written.map((line, i) => ({ file: 0, offset: i * 128, line })));
  });

  it('keys lines after a rotation by the next file from its offset 0, and a line cut by the rotation by where it starts', async () => {
    const files = new LogFiles();
    files.append(ALLOC, 'agent', 'stdout', `${block(linesFrom(0, 600))}a line cut by the rota`);
    files.rotate(ALLOC, 'agent', 'stdout');
    files.append(ALLOC, 'agent', 'stdout', `tion\n${block(linesFrom(600, 610))}`);
    const lines = keyed(read(await wire(files, {})));
    assert.equal(lines.length, 611);
    assert.deepEqual(lines[599], { file: 0, offset: 599 * 128, line: lineText(599) });
    assert.deepEqual(lines[600], { file: 0, offset: 600 * 128, line: 'a line cut by the rotation' });
    assert.deepEqual(lines.slice(601), linesFrom(600, 610).map((line, k) => ({ file: 1, offset: 5 + k * 128, line })));
  });

  it('gives a line the same key whether the read starts at the log\'s start or 128 KiB from its end', async () => {
    const files = new LogFiles();
    files.append(ALLOC, 'agent', 'stdout', block(linesFrom(0, 1280))); // 160 KiB
    files.rotate(ALLOC, 'agent', 'stdout');
    files.append(ALLOC, 'agent', 'stdout', block(linesFrom(1280, 1580)));
    const whole = new Map(read(await wire(files, {})).map((line) => [line.line, { file: line.file, offset: line.offset }]));
    // 128 KiB from the end: 90.5 KiB back into .0, from line 556 (the driver drops the first line: it may be cut).
    const recent = read(await wire(files, { origin: 'end', offset: 128 * KIB })).slice(1);
    assert.equal(recent[0]!.line, lineText(557));
    assert.equal(recent.length, 1580 - 557);
    for (const line of recent) assert.deepEqual({ file: line.file, offset: line.offset }, whole.get(line.line), line.line);
  });

  it('makes entry ids that increase line after line across a full frame and a rotation: resuming after any id gives exactly the later lines', async () => {
    const files = new LogFiles();
    const written = [...linesFrom(0, 1280), ...linesFrom(1280, 1580)];
    files.append(ALLOC, 'agent', 'stdout', block(written.slice(0, 1280)));
    files.rotate(ALLOC, 'agent', 'stdout');
    files.append(ALLOC, 'agent', 'stdout', block(written.slice(1280)));
    const entries = toEntries(read(await wire(files, {})), 'agt_logs', allocation, 'stdout', new Date());
    const ids = entries.map((entry) => entry.id);
    assert.deepEqual(entries.map((entry) => entry.message), written);
    assert.deepEqual([...ids].sort(), ids, 'ids sort in the order the lines were written');
    assert.equal(new Set(ids).size, ids.length, 'no two lines share an id');
    // What the SSE stream does with Last-Event-ID: everything with a greater id.
    for (const k of [0, 511, 512, 1023, 1024, 1279, 1280, 1578]) {
      assert.deepEqual(entries.filter((entry) => entry.id > ids[k]!).map((entry) => entry.message), written.slice(k + 1), `after line ${k}`);
    }
  });
});
