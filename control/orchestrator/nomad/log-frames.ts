import type { StreamFrame } from './api-types.js';

/**
 * Incremental parser of Nomad's fs logs stream (non-plain mode): JSON objects written
 * back to back with no separator, `{}` as heartbeats, split anywhere by the network.
 * It tracks string and escape state byte by byte, so a brace inside a string never
 * ends a frame, and keeps the unfinished tail for the next chunk.
 */
export class FrameParser {
  private buffer = '';
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Where the scan stopped in `buffer`, so a chunk is never scanned twice. */
  private scanned = 0;
  private readonly decoder = new TextDecoder('utf-8');

  /** Feeds raw bytes; returns the frames completed by them (heartbeats left out). */
  push(chunk: Uint8Array | string): StreamFrame[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const frames: StreamFrame[] = [];
    let start = 0;
    for (let i = this.scanned; i < this.buffer.length; i += 1) {
      const char = this.buffer[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (char === '\\') this.escaped = true;
        else if (char === '"') this.inString = false;
        continue;
      }
      if (char === '"') this.inString = true;
      else if (char === '{') this.depth += 1;
      else if (char === '}') {
        this.depth -= 1;
        if (this.depth === 0) {
          const text = this.buffer.slice(start, i + 1).trim();
          start = i + 1;
          const frame = JSON.parse(text) as StreamFrame;
          if (frame.Data !== undefined || frame.FileEvent !== undefined) frames.push(frame);
        }
      } else if (this.depth === 0 && !/\s/.test(char!)) {
        throw new Error(`unexpected ${JSON.stringify(char)} between log frames`);
      }
    }
    this.buffer = this.buffer.slice(start);
    this.scanned = this.buffer.length;
    return frames;
  }
}

/**
 * Splits decoded frame data into complete lines with the byte offset at which each
 * starts; an unfinished last line waits for the next frame.
 */
export class LineAssembler {
  private pending = Buffer.alloc(0);
  private pendingOffset = 0;

  push(frame: StreamFrame): { offset: number; line: string }[] {
    if (!frame.Data) return [];
    const data = Buffer.from(frame.Data, 'base64');
    // Frame.Offset is the file offset after its data.
    const dataStart = (frame.Offset ?? 0) - data.length;
    if (this.pending.length === 0) this.pendingOffset = dataStart;
    let bytes = Buffer.concat([this.pending, data]);
    let base = this.pendingOffset;
    const lines: { offset: number; line: string }[] = [];
    let newline = bytes.indexOf(0x0a);
    while (newline !== -1) {
      lines.push({ offset: base, line: bytes.subarray(0, newline).toString('utf8').replace(/\r$/, '') });
      bytes = bytes.subarray(newline + 1);
      base += newline + 1;
      newline = bytes.indexOf(0x0a);
    }
    this.pending = Buffer.from(bytes);
    this.pendingOffset = base;
    return lines;
  }

  /** What is left when the stream ends: a last line written without a newline. */
  flush(): { offset: number; line: string }[] {
    if (this.pending.length === 0) return [];
    const last = { offset: this.pendingOffset, line: this.pending.toString('utf8') };
    this.pending = Buffer.alloc(0);
    return [last];
  }
}
