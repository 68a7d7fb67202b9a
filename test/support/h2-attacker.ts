import net from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CLIENT_PREFACE, ErrorCode, Flag, FrameType, Setting } from '../../authz/http2/frames.js';
import { HpackDecoder } from '../../authz/http2/hpack.js';

/**
 * A hostile HTTP/2 client on a raw socket: it writes whatever frames a test builds, as fast
 * as the socket takes them (waiting for 'drain' when it does not, so the attacker's own
 * memory stays flat), and records what the server answers: GOAWAY, RST_STREAM codes,
 * response headers, PING and SETTINGS acknowledgements, and who closed the connection.
 * It also keeps the flow-control windows the server grants, for an attacker that plays by
 * the windows while it abuses everything else.
 */

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

const FRAME_HEADER_BYTES = 9;
const EMPTY = Buffer.alloc(0);
/** Frames of one write: large enough to saturate loopback, small enough to yield between writes. */
const BATCH_BYTES = 64 << 10;
const DEFAULT_WINDOW = 65_535;

/** A frame as the bytes on the wire; `length` overrides the declared length (a lie about the payload). */
export function frame(type: number, flags: number, streamId: number, payload: Uint8Array = EMPTY, length = payload.length): Buffer {
  const bytes = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  bytes.writeUIntBE(length, 0, 3);
  bytes[3] = type;
  bytes[4] = flags;
  bytes.writeUInt32BE(streamId >>> 0, 5);
  bytes.set(payload, FRAME_HEADER_BYTES);
  return bytes;
}

/** 32-bit big-endian words: RST_STREAM, WINDOW_UPDATE, GOAWAY payloads. */
export function words(...values: number[]): Buffer {
  const payload = Buffer.allocUnsafe(values.length * 4);
  values.forEach((value, i) => payload.writeUInt32BE(value >>> 0, i * 4));
  return payload;
}

export function settingsFrame(entries: ReadonlyArray<readonly [number, number]>, flags = 0): Buffer {
  const payload = Buffer.allocUnsafe(entries.length * 6);
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value >>> 0, i * 6 + 2);
  });
  return frame(FrameType.SETTINGS, flags, 0, payload);
}

const ERROR_NAMES = new Map(Object.entries(ErrorCode).map(([name, code]) => [code as number, name]));
const TYPE_NAMES = new Map(Object.entries(FrameType).map(([name, type]) => [type as number, name]));
export const errorName = (code: number | undefined): string => (code === undefined ? 'none' : (ERROR_NAMES.get(code) ?? `0x${code.toString(16)}`));
const typeName = (type: number): string => TYPE_NAMES.get(type) ?? `type 0x${type.toString(16)}`;

export interface AttackerOptions {
  /** Send the client preface and SETTINGS (default), and wait for the server to acknowledge them. */
  preface?: boolean;
  /** Entries of the preface's SETTINGS frame. */
  settings?: ReadonlyArray<readonly [number, number]>;
  /** Answer the server's SETTINGS and PINGs and give back the connection window its DATA uses, as any client does (default true). */
  polite?: boolean;
}

export interface FloodBounds {
  durationMs: number;
  maxFrames: number;
}

export class H2Attacker {
  /** Frames received, by type. */
  readonly received = new Map<number, number>();
  goAway: { lastStreamId: number; code: number; debug: string } | undefined;
  /** RST_STREAM received: the code of each stream's, and how many of each code. */
  readonly resets = new Map<number, number>();
  readonly resetCodes = new Map<number, number>();
  /** Each stream's header blocks from the server, decoded. */
  readonly responses = new Map<number, Record<string, string>[]>();
  readonly serverSettings = new Map<number, number>();
  settingsAcks = 0;
  pingAcks = 0;
  /** The payloads of the last PING ACKs (hex), to find the answer to one PING among many. */
  readonly pingAckPayloads: string[] = [];
  dataBytes = 0;
  /** Set when the server ended or reset the connection (not when this side destroyed it). */
  closedByServer = false;
  closed = false;
  socketError: string | undefined;
  framesSent = 0;
  bytesSent = 0;
  /** What the server lets this side send (§6.9): the connection window and each opened stream's. */
  connectionWindow = DEFAULT_WINDOW;
  readonly streamWindows = new Map<number, number>();

  private initialStreamWindow = DEFAULT_WINDOW;
  private readonly decoder = new HpackDecoder();
  private headerBlock: { streamId: number; fragments: Buffer[] } | undefined;
  private input: Buffer = EMPTY;
  private destroyedHere = false;
  /** Protocol duties (ACKs, WINDOW_UPDATEs) only once this side has sent its preface: a silent peer stays silent. */
  private prefaceSent = false;
  private unacknowledgedData = 0;
  private readonly changed = new Set<() => void>();

  private constructor(
    readonly socket: net.Socket,
    private readonly polite: boolean,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('end', () => {
      if (!this.destroyedHere) this.closedByServer = true;
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.socketError = error.code ?? error.message;
      if (!this.destroyedHere) this.closedByServer = true;
    });
    socket.on('close', () => {
      this.closed = true;
      this.notify();
    });
  }

  static async connect(port: number, { preface = true, settings = [], polite = true }: AttackerOptions = {}): Promise<H2Attacker> {
    const socket = net.connect(port, '127.0.0.1');
    const attacker = new H2Attacker(socket, polite);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    if (preface) {
      await attacker.write(Buffer.concat([CLIENT_PREFACE, settingsFrame(settings)]));
      await attacker.waitFor(() => attacker.settingsAcks > 0, 5_000);
    }
    return attacker;
  }

  /** Neither GOAWAY seen nor the socket closed. */
  get open(): boolean {
    return !this.closed && this.goAway === undefined;
  }

  get reading(): boolean {
    return !this.socket.isPaused();
  }

  /** Stops reading the socket: what the server sends piles up in its buffers, as with a peer that never reads. */
  pauseReading(): void {
    this.socket.pause();
  }

  resumeReading(): void {
    this.socket.resume();
  }

  /**
   * Writes `bytes`; when the socket's buffer is full, waits for 'drain', the close, or
   * `deadline`. Resolves true if it waited (the event loop has turned meanwhile).
   */
  async write(bytes: Buffer, deadline = Date.now() + 10_000, frames = 1): Promise<boolean> {
    if (this.closed || this.socket.destroyed) return false;
    if (!this.prefaceSent && bytes.subarray(0, CLIENT_PREFACE.length).equals(CLIENT_PREFACE)) this.prefaceSent = true;
    this.bytesSent += bytes.length;
    this.framesSent += frames;
    if (this.socket.write(bytes)) return false;
    await this.untilDrained(deadline);
    return true;
  }

  /**
   * Frames from `next` (its index in; undefined ends the flood) in batches, as fast as the
   * socket takes them, until `maxFrames`, `durationMs`, or the server's GOAWAY or close.
   * Returns how many frames were written.
   */
  async flood(next: (index: number) => Buffer | undefined, { durationMs, maxFrames }: FloodBounds): Promise<number> {
    const deadline = Date.now() + durationMs;
    let index = 0;
    let exhausted = false;
    while (!exhausted && index < maxFrames && Date.now() < deadline && this.open) {
      const batch: Buffer[] = [];
      let size = 0;
      while (size < BATCH_BYTES && index < maxFrames) {
        const bytes = next(index);
        if (bytes === undefined) {
          exhausted = true;
          break;
        }
        batch.push(bytes);
        size += bytes.length;
        index += 1;
      }
      if (batch.length === 0) break;
      const waited = await this.write(batch.length === 1 ? batch[0]! : Buffer.concat(batch, size), deadline, batch.length);
      // Let the socket's reads (the server's answers) in between batches.
      if (!waited) await nextTurn();
    }
    return index;
  }

  /** Resolves true once `condition` holds, false after `timeoutMs`. */
  waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (!condition()) return;
        finish(true);
      };
      const finish = (result: boolean) => {
        clearTimeout(timer);
        this.changed.delete(check);
        resolve(result);
      };
      const timer = setTimeout(() => finish(condition()), timeoutMs);
      this.changed.add(check);
    });
  }

  /** Waits for the server's verdict: its GOAWAY followed by the close, or the close alone. */
  async verdict(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    await this.waitFor(() => this.closed || this.goAway !== undefined, timeoutMs);
    if (this.goAway !== undefined && !this.closed) await this.waitFor(() => this.closed, Math.max(0, Math.min(2_000, until - Date.now())));
  }

  /** Opens stream `id` in this side's view of the windows (the caller writes its HEADERS). */
  openStream(id: number): void {
    this.streamWindows.set(id, this.initialStreamWindow);
  }

  /** Takes `bytes` of DATA out of both windows. */
  spendWindow(streamId: number, bytes: number): void {
    this.connectionWindow -= bytes;
    this.streamWindows.set(streamId, (this.streamWindows.get(streamId) ?? 0) - bytes);
  }

  destroy(): void {
    this.destroyedHere = true;
    this.socket.destroy();
  }

  /** One line of what the server did, for reports and assertion messages. */
  describe(): string {
    const goAway = this.goAway ? `GOAWAY ${errorName(this.goAway.code)} (last stream ${this.goAway.lastStreamId}${this.goAway.debug ? `, "${this.goAway.debug}"` : ''})` : 'no GOAWAY';
    const closed = this.closed ? (this.closedByServer ? `closed by the server${this.socketError ? ` (${this.socketError})` : ''}` : 'closed') : 'still open';
    const resets = [...this.resetCodes].map(([code, count]) => `${errorName(code)}×${count}`).join(' ') || 'none';
    const frames = [...this.received].map(([type, count]) => `${typeName(type)}×${count}`).join(' ') || 'none';
    return `${goAway}; ${closed}; RST_STREAM ${resets}; frames in: ${frames}; sent ${this.framesSent} frames, ${(this.bytesSent / 2 ** 20).toFixed(1)} MiB`;
  }

  private untilDrained(deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  private notify(): void {
    for (const check of [...this.changed]) check();
  }

  private receive(chunk: Buffer): void {
    const bytes = this.input.length > 0 ? Buffer.concat([this.input, chunk]) : chunk;
    let at = 0;
    while (bytes.length - at >= FRAME_HEADER_BYTES) {
      const length = bytes.readUIntBE(at, 3);
      if (bytes.length - at < FRAME_HEADER_BYTES + length) break;
      this.onFrame({
        type: bytes[at + 3]!,
        flags: bytes[at + 4]!,
        streamId: bytes.readUInt32BE(at + 5) & 0x7fffffff,
        payload: bytes.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length),
      });
      at += FRAME_HEADER_BYTES + length;
    }
    this.input = at < bytes.length ? Buffer.from(bytes.subarray(at)) : EMPTY;
    this.notify();
  }

  private onFrame({ type, flags, streamId, payload }: Frame): void {
    this.received.set(type, (this.received.get(type) ?? 0) + 1);
    switch (type) {
      case FrameType.SETTINGS:
        if (flags & Flag.ACK) this.settingsAcks += 1;
        else this.onSettings(payload);
        return;
      case FrameType.PING:
        if (flags & Flag.ACK) {
          this.pingAcks += 1;
          this.pingAckPayloads.push(payload.toString('hex'));
          if (this.pingAckPayloads.length > 64) this.pingAckPayloads.shift();
        } else if (this.polite) this.send(frame(FrameType.PING, Flag.ACK, 0, payload));
        return;
      case FrameType.GOAWAY:
        this.goAway = {
          lastStreamId: payload.length >= 4 ? payload.readUInt32BE(0) & 0x7fffffff : -1,
          code: payload.length >= 8 ? payload.readUInt32BE(4) : -1,
          debug: payload.subarray(8).toString('latin1').slice(0, 200),
        };
        return;
      case FrameType.RST_STREAM: {
        const code = payload.length >= 4 ? payload.readUInt32BE(0) : -1;
        this.resets.set(streamId, code);
        this.resetCodes.set(code, (this.resetCodes.get(code) ?? 0) + 1);
        return;
      }
      case FrameType.WINDOW_UPDATE: {
        const increment = payload.length >= 4 ? payload.readUInt32BE(0) & 0x7fffffff : 0;
        if (streamId === 0) this.connectionWindow += increment;
        else if (this.streamWindows.has(streamId)) this.streamWindows.set(streamId, this.streamWindows.get(streamId)! + increment);
        return;
      }
      case FrameType.DATA:
        this.dataBytes += payload.length;
        this.giveBackWindow(payload.length);
        return;
      case FrameType.HEADERS:
      case FrameType.CONTINUATION:
        return this.onHeaderFragment(type, flags, streamId, payload);
    }
  }

  private onSettings(payload: Buffer): void {
    for (let at = 0; at + 6 <= payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      this.serverSettings.set(id, value);
      if (id === Setting.INITIAL_WINDOW_SIZE) {
        const delta = value - this.initialStreamWindow;
        this.initialStreamWindow = value;
        for (const [stream, window] of this.streamWindows) this.streamWindows.set(stream, window + delta);
      }
    }
    if (this.polite) this.send(settingsFrame([], Flag.ACK));
  }

  private onHeaderFragment(type: number, flags: number, streamId: number, payload: Buffer): void {
    let fragment = payload;
    if (type === FrameType.HEADERS) {
      if (flags & Flag.PADDED) fragment = fragment.subarray(1, fragment.length - fragment[0]!);
      if (flags & Flag.PRIORITY) fragment = fragment.subarray(5);
      this.headerBlock = { streamId, fragments: [fragment] };
    } else if (this.headerBlock) {
      this.headerBlock.fragments.push(fragment);
    }
    if (!(flags & Flag.END_HEADERS) || !this.headerBlock) return;
    const fields: Record<string, string> = {};
    try {
      this.decoder.decode(Buffer.concat(this.headerBlock.fragments), (name, value) => (fields[name] = value));
    } catch (error) {
      fields[':undecodable'] = String(error);
    }
    const blocks = this.responses.get(streamId) ?? [];
    blocks.push(fields);
    this.responses.set(streamId, blocks);
    this.headerBlock = undefined;
  }

  /** A client that reads gives back the connection window its DATA used, so answers never wait on it. */
  private giveBackWindow(bytes: number): void {
    if (!this.polite) return;
    this.unacknowledgedData += bytes;
    if (this.unacknowledgedData < 16 << 10) return;
    this.send(frame(FrameType.WINDOW_UPDATE, 0, 0, words(this.unacknowledgedData)));
    this.unacknowledgedData = 0;
  }

  /** A frame of this side's own protocol duties, outside any flood's accounting. */
  private send(bytes: Buffer): void {
    if (this.prefaceSent && !this.socket.destroyed && !this.socket.writableEnded) this.socket.write(bytes);
  }
}
