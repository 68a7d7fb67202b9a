import type { Socket } from 'node:net';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW_SIZE,
  encodeFrame,
  ErrorCode,
  Flag,
  FRAME_HEADER_BYTES,
  FrameType,
  MAX_FRAME_SIZE_LIMIT,
  MAX_WINDOW_SIZE,
  Setting,
  settingsPayload,
  words,
  writeFrameHeader,
} from './frames.js';
import { CompressionError, HpackDecoder } from './hpack.js';

/**
 * The server side of one HTTP/2 connection (RFC 9113) on a socket: frames in, streams to
 * the caller, answers out. It keeps only what a request-answer service needs: no server
 * push, no priorities (PRIORITY is read and ignored, as §5.3.2 allows), answers whole
 * (head, body, trailers given at once). Everything a peer may send is checked as the RFC
 * says, and what it forbids ends the stream or the connection with the RFC's error code.
 */

/** A request: its headers, then its body as it arrives, then its end or its reset. */
export interface ServerStream {
  readonly id: number;
  /** Request headers by lowercase name; a repeated name keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  ondata: ((chunk: Buffer) => void) | undefined;
  /** The peer's END_STREAM: no more data. */
  onend: (() => void) | undefined;
  /** The peer reset the stream, or the connection went, before the answer was sent. */
  onclose: (() => void) | undefined;
  /** The answer is sent (or the stream reset): nothing more can be. */
  readonly closed: boolean;
  /**
   * Answers: `head` and `trailers` are HPACK blocks (hpack.ts encodeHeaderBlock). Without
   * body and trailers the head ends the stream. If the peer has not finished sending, the
   * stream is then reset with NO_ERROR (grpc/grpc PROTOCOL-HTTP2.md, Early Server Closure).
   */
  respond(head: Buffer, body?: Buffer, trailers?: Buffer): void;
  /** RST_STREAM with `code`. */
  reset(code: number): void;
}

/** What this side advertises (§6.5.2). Answers are tiny; requests are a few hundred bytes. */
const MAX_CONCURRENT_STREAMS = 1_000;
/** Bodies are consumed as they arrive, so large windows only spare WINDOW_UPDATEs. */
const STREAM_WINDOW = 1 << 20;
const CONNECTION_WINDOW = 16 << 20;
/** Decoded header list limit (name + value + 32 per field, §6.5.2) and raw block limit: a CONTINUATION flood ends here. */
const MAX_HEADER_LIST_SIZE = 64 << 10;
const MAX_HEADER_BLOCK_BYTES = 256 << 10;

const SERVER_PREFACE = Buffer.concat([
  encodeFrame(
    FrameType.SETTINGS,
    0,
    0,
    settingsPayload([
      [Setting.ENABLE_PUSH, 0],
      [Setting.MAX_CONCURRENT_STREAMS, MAX_CONCURRENT_STREAMS],
      [Setting.INITIAL_WINDOW_SIZE, STREAM_WINDOW],
      [Setting.MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST_SIZE],
    ]),
  ),
  encodeFrame(FrameType.WINDOW_UPDATE, 0, 0, words(CONNECTION_WINDOW - DEFAULT_WINDOW_SIZE)),
]);
const SETTINGS_ACK = encodeFrame(FrameType.SETTINGS, Flag.ACK, 0);

/** A connection error (§5.4.1): GOAWAY with `code`, then the connection closes. */
class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A stream error (§5.4.2): RST_STREAM with `code`; the connection goes on. */
class StreamError extends Error {
  constructor(
    readonly streamId: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface HeaderBlockInProgress {
  streamId: number;
  endStream: boolean;
  fragments: Buffer[];
  bytes: number;
}

export class Http2Connection {
  private readonly decoder = new HpackDecoder();
  private readonly streams = new Map<number, Stream>();
  private input: Buffer | undefined;
  private prefaceSeen = false;
  private settingsSeen = false;
  private headerBlock: HeaderBlockInProgress | undefined;
  private lastStreamId = 0;
  private goingAway = false;
  private closed = false;
  private output: Buffer[] = [];
  private flushScheduled = false;
  /** What the peer allows this side to send (§6.9), and its largest frame (§6.5.2). */
  private sendWindow = DEFAULT_WINDOW_SIZE;
  private peerStreamWindow = DEFAULT_WINDOW_SIZE;
  private peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  /** What the peer may still send, and what it has sent since the last WINDOW_UPDATE. */
  private receiveWindow = CONNECTION_WINDOW;
  private unacknowledged = 0;
  /** Streams whose answer waits for send window. */
  private readonly blocked = new Set<Stream>();

  /** Called once the connection is gone. */
  onclose: (() => void) | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly onStream: (stream: ServerStream) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('drain', () => socket.resume());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.lost());
    this.send(SERVER_PREFACE);
  }

  /** Graceful close (§6.8): no new streams; the connection closes once open ones are answered. */
  goAway(): void {
    if (this.goingAway || this.closed) return;
    this.goingAway = true;
    this.send(encodeFrame(FrameType.GOAWAY, 0, 0, words(this.lastStreamId, ErrorCode.NO_ERROR)));
    this.endIfIdle();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    const bytes = this.input ? Buffer.concat([this.input, chunk]) : chunk;
    this.input = undefined;
    let at = 0;
    try {
      if (!this.prefaceSeen) {
        const length = Math.min(bytes.length, CLIENT_PREFACE.length);
        if (!bytes.subarray(0, length).equals(CLIENT_PREFACE.subarray(0, length))) {
          // Not HTTP/2 with prior knowledge (§3.3): nothing to say in HTTP/2 terms.
          this.socket.destroy();
          return;
        }
        if (length < CLIENT_PREFACE.length) {
          this.input = bytes;
          return;
        }
        this.prefaceSeen = true;
        at = CLIENT_PREFACE.length;
      }
      while (bytes.length - at >= FRAME_HEADER_BYTES && !this.closed) {
        const length = (bytes[at]! << 16) | (bytes[at + 1]! << 8) | bytes[at + 2]!;
        // §4.2: nothing above SETTINGS_MAX_FRAME_SIZE, which this side leaves at its default.
        if (length > DEFAULT_MAX_FRAME_SIZE) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, `a frame of ${length} bytes`);
        if (bytes.length - at < FRAME_HEADER_BYTES + length) break;
        const type = bytes[at + 3]!;
        const flags = bytes[at + 4]!;
        const streamId = bytes.readUInt32BE(at + 5) & 0x7fffffff;
        const payload = bytes.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length);
        at += FRAME_HEADER_BYTES + length;
        try {
          this.frame(type, flags, streamId, payload);
        } catch (error) {
          if (!(error instanceof StreamError)) throw error;
          this.resetStream(error.streamId, error.code);
        }
      }
    } catch (error) {
      if (!(error instanceof ConnectionError)) throw error;
      this.fail(error.code);
      return;
    }
    if (at < bytes.length) this.input = bytes.subarray(at);
  }

  private frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    // §6.10: a header block is a contiguous run of HEADERS and CONTINUATION frames.
    if (this.headerBlock && type !== FrameType.CONTINUATION) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'a frame inside a header block');
    // §3.4: the client preface ends with SETTINGS.
    if (!this.settingsSeen && type !== FrameType.SETTINGS) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'the first frame is not SETTINGS');
    switch (type) {
      case FrameType.DATA:
        return this.data(flags, streamId, payload);
      case FrameType.HEADERS:
        return this.headers(flags, streamId, payload);
      case FrameType.PRIORITY:
        if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) throw new StreamError(streamId, ErrorCode.FRAME_SIZE_ERROR, 'PRIORITY of the wrong size');
        return;
      case FrameType.RST_STREAM:
        return this.peerReset(streamId, payload);
      case FrameType.SETTINGS:
        return this.settings(flags, streamId, payload);
      case FrameType.PUSH_PROMISE:
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      case FrameType.PING:
        if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PING on a stream');
        if (payload.length !== 8) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'PING of the wrong size');
        if (!(flags & Flag.ACK)) this.send(encodeFrame(FrameType.PING, Flag.ACK, 0, payload));
        return;
      case FrameType.GOAWAY:
        if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'GOAWAY on a stream');
        this.goingAway = true;
        return this.endIfIdle();
      case FrameType.WINDOW_UPDATE:
        return this.windowUpdate(streamId, payload);
      case FrameType.CONTINUATION:
        return this.continuation(flags, streamId, payload);
      default:
        // §4.1: "Implementations MUST ignore and discard frames of unknown types."
        return;
    }
  }

  private settings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & Flag.ACK) {
      if (payload.length !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    this.settingsSeen = true;
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (id === Setting.ENABLE_PUSH && value > 1) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH above 1');
      if (id === Setting.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW_SIZE) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1');
        // §6.9.2: the change applies to every open stream's window.
        const delta = value - this.peerStreamWindow;
        this.peerStreamWindow = value;
        for (const stream of this.streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > MAX_WINDOW_SIZE) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
        }
      }
      if (id === Setting.MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_FRAME_SIZE_LIMIT) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
        this.peerMaxFrameSize = value;
      }
      // HEADER_TABLE_SIZE bounds the peer's decoder, which this side's literals never fill;
      // the rest (and unknown ids, §6.5.2) need nothing from a server.
    }
    this.send(SETTINGS_ACK);
    this.flushBlocked();
  }

  private headers(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let fragment = unpad(flags, payload);
    if (flags & Flag.PRIORITY) {
      if (fragment.length < 5) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'HEADERS too short for its priority');
      fragment = fragment.subarray(5);
    }
    this.headerBlock = { streamId, endStream: (flags & Flag.END_STREAM) !== 0, fragments: [fragment], bytes: fragment.length };
    if (flags & Flag.END_HEADERS) this.headerBlockComplete();
  }

  private continuation(flags: number, streamId: number, payload: Buffer): void {
    const block = this.headerBlock;
    if (!block || block.streamId !== streamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'CONTINUATION without its HEADERS');
    block.fragments.push(payload);
    block.bytes += payload.length;
    if (block.bytes > MAX_HEADER_BLOCK_BYTES) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'a header block too large');
    if (flags & Flag.END_HEADERS) this.headerBlockComplete();
  }

  private headerBlockComplete(): void {
    const { streamId, endStream, fragments } = this.headerBlock!;
    this.headerBlock = undefined;
    // Every block is decoded, whatever becomes of its stream: it may change the dynamic table (RFC 7541 §2.2).
    const headers: Record<string, string> = Object.create(null);
    let listSize = 0;
    let malformed = false;
    try {
      this.decoder.decode(fragments.length === 1 ? fragments[0]! : Buffer.concat(fragments), (name, value) => {
        listSize += name.length + value.length + 32;
        // §8.2.1: "A field name MUST NOT contain characters in the ranges 0x41 to 0x5a".
        if (UPPERCASE.test(name)) malformed = true;
        headers[name] = value;
      });
    } catch (error) {
      if (error instanceof CompressionError) throw new ConnectionError(ErrorCode.COMPRESSION_ERROR, error.message);
      throw error;
    }
    const open = this.streams.get(streamId);
    if (open) {
      // Trailers from the client (§8.1) must end its side; gRPC clients send none.
      if (!endStream || open.remoteEnded) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'HEADERS on an open stream');
      return open.remoteEnd();
    }
    // §5.1.1: a client's stream identifiers are odd and rise; §5.4.2: frames on a stream
    // this side has reset are ignored (trailers the client sent before seeing the reset).
    if (streamId % 2 === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `stream ${streamId} cannot be opened by a client`);
    if (streamId <= this.lastStreamId) return;
    this.lastStreamId = streamId;
    if (this.goingAway || this.streams.size >= MAX_CONCURRENT_STREAMS) throw new StreamError(streamId, ErrorCode.REFUSED_STREAM, 'not taking new streams');
    if (malformed || listSize > MAX_HEADER_LIST_SIZE) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'malformed or oversized headers');
    const stream = new Stream(this, streamId, headers, this.peerStreamWindow);
    this.streams.set(streamId, stream);
    this.onStream(stream);
    if (endStream) stream.remoteEnd();
  }

  private data(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on stream 0');
    // §6.9.1: the whole frame, padding included, counts against both windows.
    this.receiveWindow -= payload.length;
    if (this.receiveWindow < 0) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    this.acknowledge(payload.length);
    const stream = this.streams.get(streamId);
    if (!stream) {
      // §5.1: DATA on an idle stream is a connection error; on a closed one (reset here), ignored.
      if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on an idle stream');
      return;
    }
    if (stream.remoteEnded) throw new StreamError(streamId, ErrorCode.STREAM_CLOSED, 'DATA after END_STREAM');
    stream.receiveWindow -= payload.length;
    if (stream.receiveWindow < 0) throw new StreamError(streamId, ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the stream window');
    const body = unpad(flags, payload);
    if (body.length > 0) stream.ondata?.(body);
    if (flags & Flag.END_STREAM) stream.remoteEnd();
    else if (stream.receiveWindow < STREAM_WINDOW / 2 && !stream.closed) {
      this.send(encodeFrame(FrameType.WINDOW_UPDATE, 0, streamId, words(STREAM_WINDOW - stream.receiveWindow)));
      stream.receiveWindow = STREAM_WINDOW;
    }
  }

  /** Bodies are handed on as they come, so the connection window is given back as it is used. */
  private acknowledge(bytes: number): void {
    this.unacknowledged += bytes;
    if (this.unacknowledged < CONNECTION_WINDOW / 2) return;
    this.send(encodeFrame(FrameType.WINDOW_UPDATE, 0, 0, words(this.unacknowledged)));
    this.receiveWindow += this.unacknowledged;
    this.unacknowledged = 0;
  }

  private windowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'WINDOW_UPDATE of the wrong size');
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (streamId === 0) {
      if (increment === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'a WINDOW_UPDATE of 0');
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW_SIZE) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'the connection window above 2^31-1');
      return this.flushBlocked();
    }
    const stream = this.streams.get(streamId);
    if (!stream) {
      if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    if (increment === 0) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'a WINDOW_UPDATE of 0');
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW_SIZE) throw new StreamError(streamId, ErrorCode.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
    if (this.blocked.has(stream)) this.flushBlocked();
  }

  private peerReset(streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
    const stream = this.streams.get(streamId);
    if (!stream) {
      if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
      return;
    }
    this.forget(stream);
    stream.onclose?.();
  }

  /** Sends `head`, then `body` and `trailers` as far as the windows allow; the rest waits for WINDOW_UPDATE. */
  write(stream: Stream, head: Buffer, body: Buffer | undefined, trailers: Buffer | undefined): void {
    if (body && trailers && this.fitsAtOnce(stream, head, body, trailers)) return this.writeAtOnce(stream, head, body, trailers);
    const headOnly = !body && !trailers;
    this.writeHeaderBlock(stream.id, head, headOnly);
    if (headOnly) return this.localEnd(stream);
    stream.pendingBody = body ?? EMPTY;
    stream.pendingTrailers = trailers;
    this.flushStream(stream);
  }

  private fitsAtOnce(stream: Stream, head: Buffer, body: Buffer, trailers: Buffer): boolean {
    const largest = Math.max(head.length, body.length, trailers.length);
    return largest <= this.peerMaxFrameSize && body.length <= stream.sendWindow && body.length <= this.sendWindow;
  }

  /** The usual answer, HEADERS, DATA and trailing HEADERS, in one buffer: what every allowed Check sends. */
  private writeAtOnce(stream: Stream, head: Buffer, body: Buffer, trailers: Buffer): void {
    const frames = Buffer.allocUnsafe(3 * FRAME_HEADER_BYTES + head.length + body.length + trailers.length);
    let at = putFrame(frames, 0, FrameType.HEADERS, Flag.END_HEADERS, stream.id, head);
    at = putFrame(frames, at, FrameType.DATA, 0, stream.id, body);
    putFrame(frames, at, FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, stream.id, trailers);
    stream.sendWindow -= body.length;
    this.sendWindow -= body.length;
    this.send(frames);
    this.localEnd(stream);
  }

  private flushStream(stream: Stream): void {
    let body = stream.pendingBody!;
    while (body.length > 0) {
      const size = Math.min(body.length, stream.sendWindow, this.sendWindow, this.peerMaxFrameSize);
      if (size <= 0) {
        stream.pendingBody = body;
        this.blocked.add(stream);
        return;
      }
      this.send(encodeFrame(FrameType.DATA, 0, stream.id, body.subarray(0, size)));
      stream.sendWindow -= size;
      this.sendWindow -= size;
      body = body.subarray(size);
    }
    this.blocked.delete(stream);
    stream.pendingBody = undefined;
    if (stream.pendingTrailers) this.writeHeaderBlock(stream.id, stream.pendingTrailers, true);
    else this.send(encodeFrame(FrameType.DATA, Flag.END_STREAM, stream.id));
    this.localEnd(stream);
  }

  /** In the order they blocked; one held by its own stream window does not hold the others. */
  private flushBlocked(): void {
    for (const stream of [...this.blocked]) {
      if (this.sendWindow <= 0) return;
      this.flushStream(stream);
    }
  }

  /** HEADERS, and CONTINUATION frames for a block above the peer's largest frame (§4.3). */
  private writeHeaderBlock(streamId: number, block: Buffer, endStream: boolean): void {
    const endFlag = endStream ? Flag.END_STREAM : 0;
    if (block.length <= this.peerMaxFrameSize) {
      this.send(encodeFrame(FrameType.HEADERS, endFlag | Flag.END_HEADERS, streamId, block));
      return;
    }
    for (let at = 0; at < block.length; at += this.peerMaxFrameSize) {
      const last = at + this.peerMaxFrameSize >= block.length;
      const type = at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION;
      const flags = (at === 0 ? endFlag : 0) | (last ? Flag.END_HEADERS : 0);
      this.send(encodeFrame(type, flags, streamId, block.subarray(at, at + this.peerMaxFrameSize)));
    }
  }

  /** This side's END_STREAM is out: the stream is done once the peer's side is too. */
  private localEnd(stream: Stream): void {
    stream.localEnded = true;
    if (stream.remoteEnded) return this.forget(stream);
    // PROTOCOL-HTTP2.md, Early Server Closure: RST_STREAM(NO_ERROR) "to allow the stream to be deallocated".
    this.resetStream(stream.id, ErrorCode.NO_ERROR);
  }

  resetStream(streamId: number, code: number): void {
    this.send(encodeFrame(FrameType.RST_STREAM, 0, streamId, words(code)));
    const stream = this.streams.get(streamId);
    if (stream) this.forget(stream);
  }

  private forget(stream: Stream): void {
    stream.localEnded = true;
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    this.endIfIdle();
  }

  private endIfIdle(): void {
    if (this.goingAway && this.streams.size === 0 && !this.closed) {
      this.flush();
      this.socket.end();
    }
  }

  /** A connection error: GOAWAY with `code` and the last stream this side took, then close. */
  private fail(code: number): void {
    this.send(encodeFrame(FrameType.GOAWAY, 0, 0, words(this.lastStreamId, code)));
    this.flush();
    this.socket.end();
    this.lost();
  }

  private lost(): void {
    if (this.closed) return;
    this.closed = true;
    const open = [...this.streams.values()];
    this.streams.clear();
    this.blocked.clear();
    for (const stream of open) {
      stream.localEnded = true;
      stream.onclose?.();
    }
    this.onclose?.();
  }

  /** Frames written in one turn of the event loop leave in one socket write. */
  private send(frame: Buffer): void {
    this.output.push(frame);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.output.length === 0 || this.socket.destroyed || this.socket.writableEnded) {
      this.output = [];
      return;
    }
    const bytes = this.output.length === 1 ? this.output[0]! : Buffer.concat(this.output);
    this.output = [];
    // A peer that does not read its answers stops being read (backpressure), until 'drain'.
    if (!this.socket.write(bytes)) this.socket.pause();
  }
}

const EMPTY = Buffer.alloc(0);
const UPPERCASE = /[A-Z]/;

/** Writes a whole frame at `at` in `target`; returns where the next one starts. */
function putFrame(target: Buffer, at: number, type: number, flags: number, streamId: number, payload: Buffer): number {
  writeFrameHeader(target, at, payload.length, type, flags, streamId);
  payload.copy(target, at + FRAME_HEADER_BYTES);
  return at + FRAME_HEADER_BYTES + payload.length;
}

/** §6.1: with PADDED, the first byte is the pad length, and the padding ends the payload. */
function unpad(flags: number, payload: Buffer): Buffer {
  if (!(flags & Flag.PADDED)) return payload;
  if (payload.length === 0 || payload[0]! >= payload.length) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'padding as long as the frame');
  return payload.subarray(1, payload.length - payload[0]!);
}

class Stream implements ServerStream {
  ondata: ((chunk: Buffer) => void) | undefined;
  onend: (() => void) | undefined;
  onclose: (() => void) | undefined;
  remoteEnded = false;
  localEnded = false;
  receiveWindow = STREAM_WINDOW;
  pendingBody: Buffer | undefined;
  pendingTrailers: Buffer | undefined;

  constructor(
    private readonly connection: Http2Connection,
    readonly id: number,
    readonly headers: Readonly<Record<string, string>>,
    public sendWindow: number,
  ) {}

  get closed(): boolean {
    return this.localEnded;
  }

  respond(head: Buffer, body?: Buffer, trailers?: Buffer): void {
    if (this.localEnded || this.pendingBody) throw new Error(`stream ${this.id} has already been answered`);
    this.connection.write(this, head, body, trailers);
  }

  reset(code: number): void {
    if (!this.localEnded) this.connection.resetStream(this.id, code);
  }

  remoteEnd(): void {
    this.remoteEnded = true;
    this.onend?.();
  }
}
