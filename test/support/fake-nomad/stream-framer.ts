/**
 * Nomad's StreamFramer, ported from client/lib/streamframer/framer.go (HEAD aa026cc):
 * it batches what the fs logs endpoint reads into frames of at most `frameSize` bytes,
 * flushes a partial frame every batch window and sends `{}` heartbeats. Ported as it is,
 * including how `Offset` behaves, because the driver must read real Nomad's frames:
 *
 * - A frame's Offset is the one passed to the first Send after the frame was cleared;
 *   streamFile passes the file offset *after* the bytes it read, so for one read the
 *   Offset is where the frame's data ends. Later Sends merged into the frame keep it.
 * - After Send flushes a full frame, `Offset += len(Data)` while the working frame is not
 *   cleared: the next frame then carries the flushed frame's end plus 64 KiB, which runs
 *   ahead of the data it holds (framer.go `Send`, "Update the offset").
 */

export interface StreamFrame {
  Offset: number;
  Data: Buffer | null;
  File: string;
  FileEvent: string;
}

const cleared = (): StreamFrame => ({ Offset: 0, Data: null, File: '', FileEvent: '' });

// framer.go IsCleared: a Data slice of length 0 is never stored (readData returns nil).
const isCleared = (frame: StreamFrame) => frame.Offset === 0 && frame.Data === null && frame.File === '' && frame.FileEvent === '';

// framer.go Copy
const copyOf = (frame: StreamFrame): StreamFrame => ({ ...frame, Data: frame.Data ? Buffer.from(frame.Data) : null });

/** framer.go HeartbeatStreamFrame. */
export const HEARTBEAT: StreamFrame = cleared();

/**
 * A frame as the client's logs endpoint writes it (client/fs_endpoint.go `logs`: Nomad's
 * JsonHandle honours the `json:",omitempty"` tags and writes []byte as base64; frames
 * follow each other with no separator, a heartbeat is `{}`).
 */
export function encodeFrame(frame: StreamFrame): string {
  const json: Record<string, unknown> = {};
  if (frame.Offset !== 0) json.Offset = frame.Offset;
  if (frame.Data && frame.Data.length > 0) json.Data = frame.Data.toString('base64');
  if (frame.File) json.File = frame.File;
  if (frame.FileEvent) json.FileEvent = frame.FileEvent;
  return JSON.stringify(json);
}

export class StreamFramer {
  private frame = cleared();
  private data = Buffer.alloc(0);
  private running = false;
  private exited = false;
  private tickers: NodeJS.Timeout[] = [];

  constructor(
    private readonly out: (frame: StreamFrame) => void,
    private readonly heartbeatMs: number,
    private readonly batchWindowMs: number,
    private readonly frameSize: number,
  ) {}

  /** framer.go Run / run: the batch-window flush and the heartbeat. */
  run(): void {
    if (this.running) return;
    this.running = true;
    this.tickers = [
      setInterval(() => {
        if (!isCleared(this.frame)) this.send();
      }, this.batchWindowMs),
      setInterval(() => this.out(HEARTBEAT), this.heartbeatMs),
    ];
  }

  /** framer.go Destroy, then the end of run: "Send() may have left a partial frame. Send it now." */
  destroy(): void {
    if (this.exited) return;
    for (const ticker of this.tickers) clearInterval(ticker);
    if (!isCleared(this.frame)) {
      this.frame.Data = this.readData();
      if (this.frame.Data) this.out(copyOf(this.frame));
    }
    this.exited = true;
    this.running = false;
  }

  /** framer.go Send. */
  sendData(file: string, fileEvent: string, data: Buffer, offset: number): void {
    if (!this.running) throw new Error('StreamFramer not running');
    // "Check if not mergeable": another file or event flushes the frame being built.
    if (!isCleared(this.frame) && (this.frame.File !== file || this.frame.FileEvent !== fileEvent)) this.send();
    if (isCleared(this.frame)) {
      this.frame.Offset = offset;
      this.frame.File = file;
      this.frame.FileEvent = fileEvent;
    }
    this.data = Buffer.concat([this.data, data]);
    // "Handle the delete case in which there is no data"
    let force = this.data.length === 0 && this.frame.FileEvent !== '';
    while (this.data.length >= this.frameSize || force) {
      force = false;
      if (this.exited) return;
      this.frame.Data = this.readData();
      this.out(copyOf(this.frame));
      // "Update the offset": the frame is not cleared, so the next one starts from here.
      this.frame.Offset += this.frame.Data?.length ?? 0;
    }
  }

  /** framer.go send: sends the working frame with up to one frame of data, and clears it. */
  private send(): void {
    if (this.exited) return;
    this.frame.Data = this.readData();
    this.out(copyOf(this.frame));
    this.frame = cleared();
  }

  /** framer.go readData: up to frameSize buffered bytes, or nil (null) when none. */
  private readData(): Buffer | null {
    const size = Math.min(this.data.length, this.frameSize);
    if (size === 0) return null;
    const read = this.data.subarray(0, size);
    this.data = this.data.subarray(size);
    return read;
  }
}
