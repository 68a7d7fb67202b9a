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

/** Where a line starts: N of the log file `<task>.<stream>.<N>`, and the byte offset in that file. */
export interface LinePosition {
  file: number;
  offset: number;
}

export interface LogLine extends LinePosition {
  line: string;
}

// client/fs_endpoint.go truncateEvent: the frame's data starts again at offset 0.
const TRUNCATED = 'file truncated';

/** N of `alloc/logs/<task>.<stream>.<N>`, as client/fs_endpoint.go logIndexes reads it. */
export function fileIndexOf(path: string): number {
  const match = /\.(\d+)$/.exec(path);
  if (!match) throw new Error(`not a Nomad log file: ${JSON.stringify(path)}`);
  return Number(match[1]);
}

/**
 * Where each frame's data lies, counted from the bytes received, because a frame's
 * Offset cannot be trusted (client/lib/streamframer/framer.go `Send`): it is the offset
 * after the first read merged into the frame, and after a full 64 KiB frame the next one
 * carries that frame's end plus 64 KiB, ahead of its data. What is exact:
 * - a later file is read from offset 0 (client/fs_endpoint.go logsImpl: `offset = 0`
 *   once a file is done), and so is a file after a truncation (streamFile);
 * - the first frame of an origin=end read holds one read: the read starts at least
 *   128 KiB before the end of the file and gets a full 64 KiB frame, unless findClosest
 *   walked back into an older file, which no longer grows, or clamped to offset 0 of the
 *   first file. Its Offset less its length is then where it starts (at least 0).
 */
class ReadPosition {
  private file: string | undefined;
  private fileIndex = 0;
  private offset = 0;
  private event = '';

  /** Where `frame`'s data starts, and whether the file restarted (truncated) there. */
  advance(frame: StreamFrame, length: number): { start: LinePosition; restarted: boolean } {
    let restarted = false;
    if (frame.File !== undefined && frame.File !== this.file) {
      this.offset = this.file === undefined ? Math.max(0, (frame.Offset ?? 0) - length) : 0;
      this.file = frame.File;
      this.fileIndex = fileIndexOf(frame.File);
    } else if (frame.FileEvent === TRUNCATED && this.event !== TRUNCATED) {
      // The frames after a full flush keep the event (framer.go Send): only the first restarts.
      this.offset = 0;
      restarted = true;
    }
    this.event = frame.FileEvent ?? '';
    const start = { file: this.fileIndex, offset: this.offset };
    this.offset += length;
    return { start, restarted };
  }
}

/**
 * Splits decoded frame data into complete lines, each with where it starts; an
 * unfinished last line waits for the next frame, even across a rotation (the line then
 * starts in the older file).
 */
export class LineAssembler {
  private readonly position = new ReadPosition();
  private pending = Buffer.alloc(0);
  private pendingStart: LinePosition = { file: 0, offset: 0 };

  push(frame: StreamFrame): LogLine[] {
    const data = frame.Data ? Buffer.from(frame.Data, 'base64') : Buffer.alloc(0);
    const { start, restarted } = this.position.advance(frame, data.length);
    const lines = restarted ? this.flush() : [];
    let lineStart = this.pending.length > 0 ? this.pendingStart : start;
    let from = 0;
    for (let newline = data.indexOf(0x0a); newline !== -1; newline = data.indexOf(0x0a, from)) {
      const text = Buffer.concat([this.pending, data.subarray(from, newline)]).toString('utf8');
      lines.push({ ...lineStart, line: text.replace(/\r$/, '') });
      this.pending = Buffer.alloc(0);
      from = newline + 1;
      lineStart = { file: start.file, offset: start.offset + from };
    }
    if (from < data.length) {
      if (this.pending.length === 0) this.pendingStart = lineStart;
      this.pending = Buffer.concat([this.pending, data.subarray(from)]);
    }
    return lines;
  }

  /** What is left when the stream ends: a last line written without a newline. */
  flush(): LogLine[] {
    if (this.pending.length === 0) return [];
    const last = { ...this.pendingStart, line: this.pending.toString('utf8') };
    this.pending = Buffer.alloc(0);
    return [last];
  }
}
