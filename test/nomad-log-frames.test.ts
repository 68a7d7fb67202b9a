import assert from 'node:assert/strict';
import { FrameParser, LineAssembler, type LogLine } from '../control/orchestrator/nomad/log-frames.js';

const frame = (offset: number, text: string) => JSON.stringify({ Offset: offset, Data: Buffer.from(text).toString('base64'), File: 'alloc/logs/agent.stdout.0' });

describe('nomad driver: the fs logs frame parser', () => {
  // What Nomad writes: frames back to back, no separator, `{}` heartbeats between them.
  const first = 'booting {"level":"warn","msg":"a } in a string"}\nsecond li';
  const second = 'ne ünïcode\n';
  const stream = frame(first.length, first) + '{}' + frame(first.length + Buffer.byteLength(second), second) + '{}';

  const linesOf = (chunks: Buffer[]) => {
    const parser = new FrameParser();
    const assembler = new LineAssembler();
    const lines: LogLine[] = [];
    for (const chunk of chunks) for (const parsed of parser.push(chunk)) lines.push(...assembler.push(parsed));
    return lines;
  };

  const expected = [
    { file: 0, offset: 0, line: 'booting {"level":"warn","msg":"a } in a string"}' },
    { file: 0, offset: first.indexOf('second'), line: 'second line ünïcode' },
  ];

  it('decodes concatenated frames, skips heartbeats and gives each line its byte offset', () => {
    assert.deepEqual(linesOf([Buffer.from(stream)]), expected);
  });

  it('gives the same lines when the stream is split at every byte boundary', () => {
    const bytes = Buffer.from(stream);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      assert.deepEqual(linesOf([bytes.subarray(0, cut), bytes.subarray(cut)]), expected, `split at byte ${cut}`);
    }
  });

  it('gives the same lines fed one byte at a time', () => {
    const bytes = Buffer.from(stream);
    assert.deepEqual(linesOf([...bytes].map((byte) => Buffer.from([byte]))), expected);
  });

  it('keeps a last line without a newline until the stream ends', () => {
    const assembler = new LineAssembler();
    assert.deepEqual(assembler.push(JSON.parse(frame(7, 'partial'))), []);
    assert.deepEqual(assembler.flush(), [{ file: 0, offset: 0, line: 'partial' }]);
  });

  it('counts offsets from 0 again at a "file truncated" frame, once for the frames that carry it', () => {
    const assembler = new LineAssembler();
    const at = (Offset: number, text: string, FileEvent?: string) => ({ Offset, Data: Buffer.from(text).toString('base64'), File: 'alloc/logs/agent.stdout.2', FileEvent });
    const lines = [
      ...assembler.push(at(10, 'aaaa\nbbbb\n')),
      ...assembler.push(at(5, 'cccc\n', 'file truncated')),
      ...assembler.push(at(65_541, 'dddd\n', 'file truncated')), // the frame after a full flush keeps the event
    ];
    assert.deepEqual(lines, [
      { file: 2, offset: 0, line: 'aaaa' },
      { file: 2, offset: 5, line: 'bbbb' },
      { file: 2, offset: 0, line: 'cccc' },
      { file: 2, offset: 5, line: 'dddd' },
    ]);
  });

  it('refuses bytes that are not a frame', () => {
    assert.throws(() => new FrameParser().push('{}x{}'), /unexpected "x" between log frames/);
  });
});
