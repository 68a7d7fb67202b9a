import net from 'node:net';
import {
  CLIENT_PREFACE,
  DEFAULT_FRAME_SIZE,
  DEFAULT_WINDOW_SIZE,
  encodeFrame,
  Flag,
  FRAME_HEADER_BYTES,
  FrameType,
  refusal,
  Setting,
  uint32s,
  type Frame,
  type H2Event,
} from './frames.js';
import { HpackEncoder, type HeaderField } from './hpack-encoder.js';

/**
 * h2spec's client connection (spec/connection.go, Conn): a socket, its own HPACK encoding
 * context, a frame writer that writes whatever it is told (Go's Framer with
 * AllowIllegalWrites), and a reader that turns what the server sends into events, each
 * read bounded by the connection's timeout. The rules that read those events are in verify.ts.
 */

export interface PriorityParam {
  streamDep: number;
  exclusive: boolean;
  /** Zero-based: the weight is this plus one. */
  weight: number;
}

export interface HeadersFrameParam {
  streamId: number;
  blockFragment: Buffer;
  endStream?: boolean;
  endHeaders?: boolean;
  /** Bytes of zero padding; 0 leaves PADDED unset. */
  padLength?: number;
  /** Go's PriorityParam.IsZero(): all zero leaves PRIORITY unset. */
  priority?: PriorityParam;
}

const isZeroPriority = (p: PriorityParam | undefined) => !p || (p.streamDep === 0 && !p.exclusive && p.weight === 0);

function priorityBytes({ streamDep, exclusive, weight }: PriorityParam): Buffer {
  const bytes = Buffer.alloc(5);
  bytes.writeUInt32BE(((exclusive ? 0x8000_0000 : 0) | streamDep) >>> 0, 0);
  bytes[4] = weight;
  return bytes;
}

export class RawH2Client {
  /** What the server's SETTINGS said, by identifier (Conn.Settings). */
  readonly settings = new Map<number, number>();
  /** Conn.Closed: set by the first read that yields no frame (close, timeout or error). */
  closed = false;
  /** Every event read, in order, for failure messages. */
  readonly transcript: H2Event[] = [];
  /** Conn.WindowUpdate: give back the window of the DATA read, as h2spec does. */
  windowUpdate = true;

  private readonly encoder = new HpackEncoder();
  private readonly windows = new Map<number, number>([[0, DEFAULT_WINDOW_SIZE]]);
  private input: Buffer = Buffer.alloc(0);
  private ended = false;
  private readError: string | undefined;
  private wake: (() => void) | undefined;

  private constructor(
    private readonly socket: net.Socket,
    readonly timeoutMs: number,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
      this.notify();
    });
    socket.on('end', () => this.markEnded());
    socket.on('close', () => this.markEnded());
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // spec/connection.go counts ECONNRESET as "connection closed"; Go sees a write after
      // the peer closed (EPIPE) as a write error it ignores, and its next read as EOF.
      if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') this.readError = error.message;
      this.markEnded();
    });
  }

  /** spec.Dial. */
  static dial(port: number, timeoutMs: number): Promise<RawH2Client> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawH2Client(socket, timeoutMs));
      });
    });
  }

  close(): void {
    this.socket.destroy();
  }

  /**
   * Conn.Handshake as a client: the preface and SETTINGS_INITIAL_WINDOW_SIZE 65,535, then
   * frames until the server's SETTINGS (acknowledged, and kept) and the ACK of ours.
   */
  async handshake(): Promise<void> {
    this.send(CLIENT_PREFACE);
    this.writeSettings([Setting.INITIAL_WINDOW_SIZE, DEFAULT_WINDOW_SIZE]);
    const deadline = Date.now() + this.timeoutMs;
    let local = false;
    let remote = false;
    while (!(local && remote)) {
      const event = await this.nextEvent(deadline);
      if (event.kind === 'timeout') throw new Error('Timeout: the handshake did not finish');
      if (event.kind !== 'frame') throw new Error(`handshake: ${event.kind === 'error' ? event.message : 'connection closed'}`);
      const { type, flags, payload } = event.frame;
      if (type !== FrameType.SETTINGS) continue;
      if (flags & Flag.ACK) {
        local = true;
        continue;
      }
      remote = true;
      for (let at = 0; at + 6 <= payload.length; at += 6) this.settings.set(payload.readUInt16BE(at), payload.readUInt32BE(at + 2));
      this.writeSettingsAck();
    }
  }

  /** Conn.MaxFrameSize: the server's SETTINGS_MAX_FRAME_SIZE, or the default. */
  maxFrameSize(): number {
    return this.settings.get(Setting.MAX_FRAME_SIZE) ?? DEFAULT_FRAME_SIZE;
  }

  /** Conn.EncodeHeaders: the same encoding context for every block of this connection. */
  encodeHeaders(fields: readonly HeaderField[]): Buffer {
    return this.encoder.encode(fields);
  }

  setMaxDynamicTableSize(size: number): void {
    this.encoder.setMaxDynamicTableSize(size);
  }

  /** Conn.WaitEvent: the next frame, or why there is none; every event but a frame closes the connection for the rules. */
  async waitEvent(): Promise<H2Event> {
    const event = await this.nextEvent(Date.now() + this.timeoutMs);
    if (event.kind !== 'frame') this.closed = true;
    else if (event.frame.type === FrameType.DATA) this.updateWindowSize(event.frame);
    this.transcript.push(event);
    return event;
  }

  /** Conn.WaitEventByType: events until one of `type`; on a timeout, the event before it. */
  async waitEventByType(type: number): Promise<{ event: H2Event | undefined; found: boolean }> {
    let last: H2Event | undefined;
    while (!this.closed) {
      const event = await this.waitEvent();
      if (event.kind === 'frame' && event.frame.type === type) return { event, found: true };
      if (event.kind === 'timeout' && last) break;
      last = event;
    }
    return { event: last, found: false };
  }

  /** Conn.Send: raw bytes. Writes after the server closed are dropped, as h2spec ignores their errors. */
  send(bytes: Uint8Array): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(bytes);
  }

  writeRawFrame(type: number, flags: number, streamId: number, payload?: Uint8Array): void {
    this.send(encodeFrame(type, flags, streamId, payload));
  }

  writeData(streamId: number, endStream: boolean, data: Uint8Array): void {
    this.writeRawFrame(FrameType.DATA, endStream ? Flag.END_STREAM : 0, streamId, data);
  }

  writeDataPadded(streamId: number, endStream: boolean, data: Uint8Array, pad: Uint8Array): void {
    const payload = Buffer.concat([Buffer.from([pad.length]), data, pad]);
    this.writeRawFrame(FrameType.DATA, Flag.PADDED | (endStream ? Flag.END_STREAM : 0), streamId, payload);
  }

  writeHeaders(p: HeadersFrameParam): void {
    const padLength = p.padLength ?? 0;
    const withPriority = !isZeroPriority(p.priority);
    const flags = (padLength ? Flag.PADDED : 0) | (p.endStream ? Flag.END_STREAM : 0) | (p.endHeaders ? Flag.END_HEADERS : 0) | (withPriority ? Flag.PRIORITY : 0);
    const parts = [
      padLength ? Buffer.from([padLength]) : Buffer.alloc(0),
      withPriority ? priorityBytes(p.priority!) : Buffer.alloc(0),
      p.blockFragment,
      Buffer.alloc(padLength),
    ];
    this.writeRawFrame(FrameType.HEADERS, flags, p.streamId, Buffer.concat(parts));
  }

  writeContinuation(streamId: number, endHeaders: boolean, fragment: Uint8Array): void {
    this.writeRawFrame(FrameType.CONTINUATION, endHeaders ? Flag.END_HEADERS : 0, streamId, fragment);
  }

  writePriority(streamId: number, priority: PriorityParam): void {
    this.writeRawFrame(FrameType.PRIORITY, 0, streamId, priorityBytes(priority));
  }

  writeRstStream(streamId: number, code: number): void {
    this.writeRawFrame(FrameType.RST_STREAM, 0, streamId, uint32s(code));
  }

  writeSettings(...settings: (readonly [number, number])[]): void {
    const payload = Buffer.alloc(settings.length * 6);
    settings.forEach(([id, value], i) => {
      payload.writeUInt16BE(id, i * 6);
      payload.writeUInt32BE(value >>> 0, i * 6 + 2);
    });
    this.writeRawFrame(FrameType.SETTINGS, 0, 0, payload);
  }

  writeSettingsAck(): void {
    this.writeRawFrame(FrameType.SETTINGS, Flag.ACK, 0);
  }

  writePushPromise(streamId: number, promiseId: number, endHeaders: boolean, blockFragment: Buffer): void {
    this.writeRawFrame(FrameType.PUSH_PROMISE, endHeaders ? Flag.END_HEADERS : 0, streamId, Buffer.concat([uint32s(promiseId), blockFragment]));
  }

  writePing(ack: boolean, data: Buffer): void {
    this.writeRawFrame(FrameType.PING, ack ? Flag.ACK : 0, 0, data);
  }

  writeGoAway(lastStreamId: number, code: number, debugData: Uint8Array): void {
    this.writeRawFrame(FrameType.GOAWAY, 0, 0, Buffer.concat([uint32s(lastStreamId, code), debugData]));
  }

  writeWindowUpdate(streamId: number, increment: number): void {
    this.writeRawFrame(FrameType.WINDOW_UPDATE, 0, streamId, uint32s(increment));
  }

  /** Conn.updateWindowSize: a window at or below zero is topped back up to 65,535. */
  private updateWindowSize({ streamId, length }: Frame): void {
    if (!this.windowUpdate) return;
    for (const id of [streamId, 0]) {
      const window = (this.windows.get(id) ?? DEFAULT_WINDOW_SIZE) - length;
      if (window > 0) {
        this.windows.set(id, window);
        continue;
      }
      this.writeWindowUpdate(id, DEFAULT_WINDOW_SIZE - window);
      this.windows.set(id, DEFAULT_WINDOW_SIZE);
    }
  }

  /** Framer.ReadFrame with a read deadline. */
  private async nextEvent(deadline: number): Promise<H2Event> {
    for (;;) {
      const frame = this.takeFrame();
      if (frame) {
        const reason = refusal(frame);
        return reason ? { kind: 'error', message: reason } : { kind: 'frame', frame };
      }
      if (this.readError) return { kind: 'error', message: this.readError };
      if (this.ended) return this.input.length === 0 ? { kind: 'closed' } : { kind: 'error', message: 'unexpected EOF inside a frame' };
      const left = deadline - Date.now();
      if (left <= 0) return { kind: 'timeout' };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private takeFrame(): Frame | undefined {
    if (this.input.length < FRAME_HEADER_BYTES) return undefined;
    const length = this.input.readUIntBE(0, 3);
    if (this.input.length < FRAME_HEADER_BYTES + length) return undefined;
    const frame: Frame = {
      type: this.input[3]!,
      flags: this.input[4]!,
      streamId: this.input.readUInt32BE(5) & 0x7fffffff,
      length,
      payload: this.input.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + length),
    };
    this.input = this.input.subarray(FRAME_HEADER_BYTES + length);
    return frame;
  }

  private markEnded(): void {
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
