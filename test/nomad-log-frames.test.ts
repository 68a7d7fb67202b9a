import assert from 'node:assert/strict';
import { FrameParser, LineAssembler } from '../control/orchestrator/nomad/log-frames.js';

const frame = (offset: number, text: string) => JSON.stringify({ Offset: offset, Data: Buffer.from(text).toString('base64'), File: 'alloc/logs/agent.stdout.0' });

describe('nomad driver: the fs logs frame parser', () => {
  // What Nomad writes: frames back to back, no separator, `{}` heartbeats between them.
  const first = 'booting {"level":"warn","msg":"a } in a string"}\nsecond li';
  const second = 'ne ünïcode\n';
  const stream = frame(first.length, first) + '{}' + frame(first.length + Buffer.byteLength(second), second) + '{}';

  const linesOf = (chunks: Buffer[]) => {
    const parser = new FrameParser();
    const assembler = new LineAssembler();
    const lines: { offset: number; line: string }[] = [];
    for (const chunk of chunks) for (const parsed of parser.push(chunk)) lines.push(...assembler.push(parsed));
    return lines;
  };

  const expected = [
    { offset: 0, line: 'booting {"level":"warn","msg":"a } in a string"}' },
    { offset: first.indexOf('second'), line: 'second line ünïcode' },
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
    assert.deepEqual(assembler.flush(), [{ offset: 0, line: 'partial' }]);
  });

  it('refuses bytes that are not a frame', () => {
    assert.throws(() => new FrameParser().push('{}x{}'), /unexpected "x" between log frames/);
  });
});
