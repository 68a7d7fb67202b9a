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
import { DEFAULT_HTTP2_LIMITS, type Http2Limits } from './limits.js';
import { RateBudget } from './rate-budget.js';
import { RequestFieldCheck } from './request-fields.js';

/**
 * The server side of one HTTP/2 connection (RFC 9113) on a socket: frames in, streams to
 * the caller, answers out. It keeps only what a request-answer service needs: no server
 * push, no priorities (PRIORITY is read and ignored, as §5.3.2 allows), answers whole
 * (head, body, trailers given at once). Everything a peer may send is checked as the RFC
 * says, and what it forbids ends the stream or the connection with the RFC's error code.
 * What a peer may cost is bounded by authz/http2/limits.ts: memory by the windows (request
 * bytes are acknowledged only once consumed), work by the stream slots and the rate
 * budgets, time by the preface, header-block and idle timeouts.
 */

/** A request: its headers, then its body as it arrives, then its end or its reset. */
export interface ServerStream {
  readonly id: number;
  /** Request headers by lowercase name; a repeated name keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Body bytes as they arrive. They count against the peer's windows until `consume`
   * gives them back, so a handler that holds bytes holds the peer back, not authz's memory.
   */
  ondata: ((chunk: Buffer) => void) | undefined;
  /** The peer's END_STREAM: no more data. */
  onend: (() => void) | undefined;
  /** The peer reset the stream, or the connection went, before the answer was sent. */
  onclose: (() => void) | undefined;
  /** The answer is sent (or the stream reset): nothing more can be. */
  readonly closed: boolean;
  /** `bytes` of what `ondata` delivered are used up: the peer may send that much more. */
  consume(bytes: number): void;
  /**
   * Answers: `head` and `trailers` are HPACK blocks (hpack.ts encodeHeaderBlock). Without
   * body and trailers the head ends the stream. If the peer has not finished sending, the
   * stream is then reset with NO_ERROR (grpc/grpc PROTOCOL-HTTP2.md, Early Server Closure).
   * On a stream the peer has closed it sends nothing; either way the stream's slot among
   * SETTINGS_MAX_CONCURRENT_STREAMS is free again: a handler holds its slot until it answers.
   */
  respond(head: Buffer, body?: Buffer, trailers?: Buffer): void;
  /** RST_STREAM with `code`; frees the slot like `respond`. */
  reset(code: number): void;
}

const SETTINGS_ACK = encodeFrame(FrameType.SETTINGS, Flag.ACK, 0);

/** Stream ids this side closed, kept to tell frames the peer sent before it saw the close from frames on a stream it knew was closed (§5.1). */
const REMEMBERED_CLOSED_STREAMS = 1_024;

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
  continuations: number;
  /** RFC 7540 §5.3.1: "A stream cannot depend on itself"; a stream error, once the block is decoded. */
  dependsOnItself: boolean;
  timer: NodeJS.Timeout | undefined;
}

/** How a stream this side no longer holds was closed: frames after a reset of ours are expected (§5.1, "closed"). */
type ClosedHow = 'reset-here' | 'closed';

export class Http2Connection {
  private readonly decoder = new HpackDecoder();
  private readonly streams = new Map<number, Stream>();
  private readonly recentlyClosed = new Map<number, ClosedHow>();
  private input: Buffer | undefined;
  private prefaceSeen = false;
  private settingsSeen = false;
  private headerBlock: HeaderBlockInProgress | undefined;
  private lastStreamId = 0;
  /**
   * The slots of SETTINGS_MAX_CONCURRENT_STREAMS: a stream holds one while it is open or
   * its handler runs, so a reset does not free a slot its handler still works for
   * (CVE-2023-44487), nor an answer waiting for window one the peer never opens.
   */
  private slotsInUse = 0;
  private goingAway = false;
  private closed = false;
  private output: Buffer[] = [];
  private flushScheduled = false;
  /** What the peer allows this side to send (§6.9), and its largest frame (§6.5.2). */
  private sendWindow = DEFAULT_WINDOW_SIZE;
  private peerStreamWindow = DEFAULT_WINDOW_SIZE;
  private peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  /** What the peer may still send, and what was consumed since the last WINDOW_UPDATE. */
  private receiveWindow: number;
  private unacknowledged = 0;
  /** Answers waiting for connection window, oldest first; one waiting for its own stream window is not here. */
  private readonly waitingForConnectionWindow = new Set<Stream>();
  private readonly resets: RateBudget;
  private readonly controlFrames: RateBudget;
  private prefaceTimer: NodeJS.Timeout | undefined;

  /** Called once the connection is gone. */
  onclose: (() => void) | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly onStream: (stream: ServerStream) => void,
    private readonly limits: Http2Limits = DEFAULT_HTTP2_LIMITS,
  ) {
    this.receiveWindow = limits.connectionWindow;
    this.resets = new RateBudget(limits.maxResetsPerSecond);
    this.controlFrames = new RateBudget(limits.maxControlFramesPerSecond);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    // Once the connection has failed, nothing the peer sends is read again (fail()).
    socket.on('drain', () => {
      if (!this.closed) socket.resume();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.lost());
    // A peer that never finishes its preface, or falls silent, holds a socket for nothing.
    this.prefaceTimer = setTimeout(() => this.fail(ErrorCode.PROTOCOL_ERROR), limits.prefaceTimeoutMs);
    socket.setTimeout(limits.idleTimeoutMs, () => this.idle());
    this.send(
      Buffer.concat([
        encodeFrame(
          FrameType.SETTINGS,
          0,
          0,
          settingsPayload([
            [Setting.ENABLE_PUSH, 0],
            [Setting.MAX_CONCURRENT_STREAMS, limits.maxConcurrentStreams],
            [Setting.INITIAL_WINDOW_SIZE, limits.streamWindow],
            [Setting.MAX_HEADER_LIST_SIZE, limits.maxHeaderListBytes],
          ]),
        ),
        encodeFrame(FrameType.WINDOW_UPDATE, 0, 0, words(limits.connectionWindow - DEFAULT_WINDOW_SIZE)),
      ]),
    );
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

  private idle(): void {
    if (this.slotsInUse > 0) return;
    this.goAway();
    this.destroyLater();
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
          this.refuse(error.streamId, error.code);
        }
      }
      // A peer that does not read its answers (PING and SETTINGS ACKs, RST_STREAMs) is cut off, not buffered for.
      if (this.socket.writableLength > this.limits.maxPendingOutputBytes) {
        throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'the peer does not read what it asks for');
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
        this.spendControlFrame();
        if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) throw new StreamError(streamId, ErrorCode.FRAME_SIZE_ERROR, 'PRIORITY of the wrong size');
        // RFC 7540 §5.3.1: "A stream cannot depend on itself."
        if ((payload.readUInt32BE(0) & 0x7fffffff) === streamId) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'a stream depending on itself');
        return;
      case FrameType.RST_STREAM:
        return this.peerReset(streamId, payload);
      case FrameType.SETTINGS:
        return this.settings(flags, streamId, payload);
      case FrameType.PUSH_PROMISE:
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      case FrameType.PING:
        this.spendControlFrame();
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
        // §4.1: "Implementations MUST ignore and discard frames of unknown types." Counted all the same.
        return this.spendControlFrame();
    }
  }

  /** Frames that do no request work come out of one budget (CVE-2019-9512, 9515, 9516, 9518). */
  private spendControlFrame(): void {
    if (!this.controlFrames.spend()) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'too many frames that do no work');
  }

  private settings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    this.spendControlFrame();
    if (flags & Flag.ACK) {
      if (payload.length !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    if (payload.length / 6 > this.limits.maxSettingsEntries) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'SETTINGS with too many entries');
    if (!this.settingsSeen) {
      this.settingsSeen = true;
      clearTimeout(this.prefaceTimer);
    }
    let windowChanged = false;
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (id === Setting.ENABLE_PUSH && value > 1) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH above 1');
      if (id === Setting.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW_SIZE) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1');
        // §6.9.2: the change applies to every open stream's window (at most maxConcurrentStreams of them).
        const delta = value - this.peerStreamWindow;
        this.peerStreamWindow = value;
        for (const stream of this.streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > MAX_WINDOW_SIZE) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
        }
        windowChanged = delta > 0;
      }
      if (id === Setting.MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_FRAME_SIZE_LIMIT) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
        this.peerMaxFrameSize = value;
      }
      // HEADER_TABLE_SIZE bounds the peer's decoder, which this side's literals never fill;
      // the rest (and unknown ids, §6.5.2) need nothing from a server.
    }
    this.send(SETTINGS_ACK);
    if (windowChanged) {
      for (const stream of this.streams.values()) if (stream.pendingBody) this.resume(stream);
    }
  }

  private headers(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let fragment = unpad(flags, payload);
    let dependsOnItself = false;
    if (flags & Flag.PRIORITY) {
      if (fragment.length < 5) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'HEADERS too short for its priority');
      dependsOnItself = (fragment.readUInt32BE(0) & 0x7fffffff) === streamId;
      fragment = fragment.subarray(5);
    }
    this.headerBlock = {
      streamId,
      endStream: (flags & Flag.END_STREAM) !== 0,
      fragments: [fragment],
      bytes: fragment.length,
      continuations: 0,
      dependsOnItself,
      timer: undefined,
    };
    if (flags & Flag.END_HEADERS) return this.headerBlockComplete();
    // A block left open holds every other stream of the connection (§6.10): it must end soon.
    this.headerBlock.timer = setTimeout(() => this.fail(ErrorCode.PROTOCOL_ERROR), this.limits.headerBlockTimeoutMs);
  }

  private continuation(flags: number, streamId: number, payload: Buffer): void {
    const block = this.headerBlock;
    if (!block || block.streamId !== streamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'CONTINUATION without its HEADERS');
    // CVE-2024-27316: frames are counted, not only bytes, so empty CONTINUATIONs cannot run on for ever.
    block.continuations += 1;
    block.bytes += payload.length;
    if (block.continuations > this.limits.maxContinuationFrames) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'a header block of too many frames');
    if (block.bytes > this.limits.maxHeaderBlockBytes) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'a header block too large');
    if (payload.length === 0 && !(flags & Flag.END_HEADERS)) this.spendControlFrame();
    block.fragments.push(payload);
    if (flags & Flag.END_HEADERS) this.headerBlockComplete();
  }

  private headerBlockComplete(): void {
    const { streamId, endStream, fragments, dependsOnItself, timer } = this.headerBlock!;
    clearTimeout(timer);
    this.headerBlock = undefined;
    const open = this.streams.get(streamId);
    const check = new RequestFieldCheck(open !== undefined);
    // Every block is decoded, whatever becomes of its stream: it may change the dynamic table (RFC 7541 §2.2).
    const headers: Record<string, string> = Object.create(null);
    let listSize = 0;
    try {
      this.decoder.decode(fragments.length === 1 ? fragments[0]! : Buffer.concat(fragments), (name, value) => {
        listSize += name.length + value.length + 32;
        if (listSize <= this.limits.maxHeaderListBytes) {
          check.field(name, value);
          headers[name] = value;
          return;
        }
        // Past the list's limit the stream is reset: fields are decoded for the table's sake
        // (RFC 7541 §2.2), no longer checked nor kept. A block that names a large table entry
        // thousands of times (an HPACK bomb: 64 KiB decoding to 250 MB) ends the connection.
        if (listSize > HPACK_BOMB_FACTOR * this.limits.maxHeaderListBytes) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'a header block that decodes to far more than its list size');
      });
    } catch (error) {
      if (error instanceof CompressionError) throw new ConnectionError(ErrorCode.COMPRESSION_ERROR, error.message);
      throw error;
    }
    if (open) {
      // Trailers from the client (§8.1) must end its side; gRPC clients send none.
      if (open.remoteEnded) throw new ConnectionError(ErrorCode.STREAM_CLOSED, 'HEADERS after END_STREAM');
      if (!endStream || check.problem !== undefined) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, check.problem ?? 'trailers without END_STREAM');
      return this.remoteEnd(open);
    }
    // §5.1.1: a client's stream identifiers are odd and rise.
    if (streamId % 2 === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `stream ${streamId} cannot be opened by a client`);
    if (streamId <= this.lastStreamId) return this.onClosedStream(streamId, 'HEADERS');
    this.lastStreamId = streamId;
    if (dependsOnItself) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'a stream depending on itself');
    if (this.goingAway || this.slotsInUse >= this.limits.maxConcurrentStreams) throw new StreamError(streamId, ErrorCode.REFUSED_STREAM, 'not taking new streams');
    const problem = check.complete() ?? (listSize > this.limits.maxHeaderListBytes ? 'a header list above SETTINGS_MAX_HEADER_LIST_SIZE' : undefined);
    if (problem !== undefined) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, problem);
    const contentLength = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
    if (endStream && contentLength !== undefined && contentLength !== 0) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'content-length above the body sent');
    const stream = new Stream(this, streamId, headers, this.peerStreamWindow, this.limits.streamWindow, contentLength);
    this.streams.set(streamId, stream);
    this.slotsInUse += 1;
    this.onStream(stream);
    if (endStream) this.remoteEnd(stream);
  }

  /**
   * A frame on a stream this side no longer holds (§5.1): ignored if this side reset it (the
   * peer may have sent it before seeing the reset), a connection error STREAM_CLOSED if the
   * stream closed in the open, PROTOCOL_ERROR if it was never used (§5.1.1).
   */
  private onClosedStream(streamId: number, frame: string): void {
    const how = this.recentlyClosed.get(streamId);
    if (how === 'reset-here') return;
    if (how === 'closed') throw new ConnectionError(ErrorCode.STREAM_CLOSED, `${frame} on closed stream ${streamId}`);
    throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `${frame} on stream ${streamId}, below the last one opened`);
  }

  private data(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on stream 0');
    // §6.9.1: the whole frame, padding included, counts against both windows.
    this.receiveWindow -= payload.length;
    if (this.receiveWindow < 0) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    const stream = this.streams.get(streamId);
    if (!stream) {
      // §5.1: DATA on an idle stream is a connection error; on one reset here, ignored (and given back).
      if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on an idle stream');
      this.onClosedStream(streamId, 'DATA');
      return this.acknowledge(payload.length);
    }
    if (stream.remoteEnded) {
      this.acknowledge(payload.length);
      throw new StreamError(streamId, ErrorCode.STREAM_CLOSED, 'DATA after END_STREAM');
    }
    stream.receiveWindow -= payload.length;
    if (stream.receiveWindow < 0) throw new StreamError(streamId, ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the stream window');
    const body = unpad(flags, payload);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if (body.length === 0 && !endStream) this.spendControlFrame();
    // Padding is consumed here; the body when the handler says so.
    if (payload.length > body.length) this.consumed(stream, payload.length - body.length);
    stream.received += body.length;
    if (stream.contentLength !== undefined && (stream.received > stream.contentLength || (endStream && stream.received !== stream.contentLength))) {
      throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'a body that is not its content-length');
    }
    if (body.length > 0) {
      stream.held += body.length;
      stream.ondata?.(body);
    }
    if (endStream && !stream.localEnded) this.remoteEnd(stream);
  }

  /** `bytes` of a stream's data are used up: given back to the peer, in WINDOW_UPDATEs of half a window or more. */
  consumed(stream: Stream, bytes: number): void {
    if (stream.localEnded) return;
    stream.held -= Math.min(bytes, stream.held);
    this.acknowledge(bytes);
    if (stream.remoteEnded) return;
    stream.unacknowledged += bytes;
    if (stream.unacknowledged >= this.limits.streamWindow / 2) {
      this.send(encodeFrame(FrameType.WINDOW_UPDATE, 0, stream.id, words(stream.unacknowledged)));
      stream.receiveWindow += stream.unacknowledged;
      stream.unacknowledged = 0;
    }
  }

  private acknowledge(bytes: number): void {
    this.unacknowledged += bytes;
    if (this.unacknowledged < this.limits.connectionWindow / 2) return;
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
      return this.flushWaiting();
    }
    const stream = this.streams.get(streamId);
    if (!stream) {
      if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      // §5.1: allowed on a stream closed a moment ago; it does no work, so it is counted.
      return this.spendControlFrame();
    }
    if (increment === 0) throw new StreamError(streamId, ErrorCode.PROTOCOL_ERROR, 'a WINDOW_UPDATE of 0');
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW_SIZE) throw new StreamError(streamId, ErrorCode.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
    if (stream.pendingBody && !this.waitingForConnectionWindow.has(stream)) this.resume(stream);
  }

  private peerReset(streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
    if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    // CVE-2023-44487: each reset may leave a handler running; they are paid for from a budget.
    if (!this.resets.spend()) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'too many streams reset');
    const stream = this.streams.get(streamId);
    if (!stream) return;
    this.forget(stream, 'closed');
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
    this.resume(stream);
  }

  /** The stream is closed and its handler has answered (or given up): its slot is free. */
  releaseSlot(): void {
    this.slotsInUse -= 1;
    this.endIfIdle();
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

  /**
   * Sends what the windows allow of a waiting answer. Each call sends a frame or leaves the
   * stream waiting on one window, so a WINDOW_UPDATE costs O(1) however many streams wait
   * (CVE-2019-9511: 1-byte updates once walked every blocked stream).
   */
  private resume(stream: Stream): void {
    this.waitingForConnectionWindow.delete(stream);
    let body = stream.pendingBody!;
    while (body.length > 0) {
      const size = Math.min(body.length, stream.sendWindow, this.sendWindow, this.peerMaxFrameSize);
      if (size <= 0) {
        stream.pendingBody = body;
        // Waiting on its own window, it is resumed by its stream's WINDOW_UPDATE alone.
        if (stream.sendWindow > 0) this.waitingForConnectionWindow.add(stream);
        return;
      }
      this.send(encodeFrame(FrameType.DATA, 0, stream.id, body.subarray(0, size)));
      stream.sendWindow -= size;
      this.sendWindow -= size;
      body = body.subarray(size);
    }
    stream.pendingBody = undefined;
    if (stream.pendingTrailers) this.writeHeaderBlock(stream.id, stream.pendingTrailers, true);
    else this.send(encodeFrame(FrameType.DATA, Flag.END_STREAM, stream.id));
    this.localEnd(stream);
  }

  /** Oldest first, while the connection window lasts. */
  private flushWaiting(): void {
    while (this.sendWindow > 0) {
      const next = this.waitingForConnectionWindow.values().next();
      if (next.done) return;
      this.resume(next.value);
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

  private remoteEnd(stream: Stream): void {
    stream.remoteEnded = true;
    stream.onend?.();
  }

  /** This side's END_STREAM is out: the stream is done once the peer's side is too. */
  private localEnd(stream: Stream): void {
    if (stream.remoteEnded) return this.forget(stream, 'closed');
    // PROTOCOL-HTTP2.md, Early Server Closure: RST_STREAM(NO_ERROR) "to allow the stream to be deallocated".
    this.resetStream(stream.id, ErrorCode.NO_ERROR);
  }

  resetStream(streamId: number, code: number): void {
    this.send(encodeFrame(FrameType.RST_STREAM, 0, streamId, words(code)));
    const stream = this.streams.get(streamId);
    if (stream) this.forget(stream, 'reset-here');
    else this.remember(streamId, 'reset-here');
  }

  /** A stream error of the peer's making: RST_STREAM, paid for from the reset budget like the peer's own resets (CVE-2019-9514). */
  private refuse(streamId: number, code: number): void {
    if (!this.resets.spend()) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'too many streams reset');
    const stream = this.streams.get(streamId);
    this.resetStream(streamId, code);
    stream?.onclose?.();
  }

  private forget(stream: Stream, how: ClosedHow): void {
    this.streams.delete(stream.id);
    this.waitingForConnectionWindow.delete(stream);
    stream.pendingBody = undefined;
    // What the stream held unconsumed goes back to the connection's window (§6.9).
    if (stream.held > 0) this.acknowledge(stream.held);
    stream.held = 0;
    this.remember(stream.id, how);
    stream.closedHere();
  }

  private remember(streamId: number, how: ClosedHow): void {
    this.recentlyClosed.set(streamId, how);
    if (this.recentlyClosed.size > REMEMBERED_CLOSED_STREAMS) this.recentlyClosed.delete(this.recentlyClosed.keys().next().value!);
  }

  private endIfIdle(): void {
    if (this.goingAway && this.slotsInUse === 0 && !this.closed) {
      this.flush();
      this.socket.end();
    }
  }

  /** A connection error: GOAWAY with `code` and the last stream this side took, then close. */
  private fail(code: number): void {
    if (this.closed) return;
    this.send(encodeFrame(FrameType.GOAWAY, 0, 0, words(this.lastStreamId, code)));
    this.flush();
    this.socket.end();
    // A flooding peer would otherwise be read at full speed, and its bytes allocated and
    // dropped, for the whole grace below: TCP's flow control holds it off instead.
    this.socket.pause();
    this.destroyLater();
    this.lost();
  }

  /**
   * The GOAWAY leaves with a FIN, and the peer gets a moment to read it: closing at once
   * with its frames unread would send a TCP reset, which may discard the GOAWAY. A peer
   * that does not close its side in that moment is cut off.
   */
  private destroyLater(): void {
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  private lost(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.prefaceTimer);
    clearTimeout(this.headerBlock?.timer);
    this.headerBlock = undefined;
    this.input = undefined;
    const open = [...this.streams.values()];
    this.streams.clear();
    this.waitingForConnectionWindow.clear();
    this.recentlyClosed.clear();
    for (const stream of open) {
      stream.localEnded = true;
      stream.pendingBody = undefined;
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
const CLOSE_GRACE_MS = 1_000;
/** A header list this many times SETTINGS_MAX_HEADER_LIST_SIZE is no client's mistake. */
const HPACK_BOMB_FACTOR = 4;

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
  /** The handler has answered or reset; the slot is given back once both ends are done. */
  private handlerFinished = false;
  receiveWindow: number;
  /** Body bytes delivered and not yet consumed, and consumed bytes not yet given back in a WINDOW_UPDATE. */
  held = 0;
  unacknowledged = 0;
  received = 0;
  pendingBody: Buffer | undefined;
  pendingTrailers: Buffer | undefined;

  constructor(
    private readonly connection: Http2Connection,
    readonly id: number,
    readonly headers: Readonly<Record<string, string>>,
    public sendWindow: number,
    receiveWindow: number,
    readonly contentLength: number | undefined,
  ) {
    this.receiveWindow = receiveWindow;
  }

  get closed(): boolean {
    return this.localEnded;
  }

  consume(bytes: number): void {
    this.connection.consumed(this, bytes);
  }

  respond(head: Buffer, body?: Buffer, trailers?: Buffer): void {
    if (this.handlerFinished) throw new Error(`stream ${this.id} has already been answered`);
    this.finish();
    if (!this.localEnded) this.connection.write(this, head, body, trailers);
  }

  reset(code: number): void {
    if (this.handlerFinished) return;
    this.finish();
    if (!this.localEnded) this.connection.resetStream(this.id, code);
  }

  /** The connection no longer holds the stream. */
  closedHere(): void {
    this.localEnded = true;
    if (this.handlerFinished) this.connection.releaseSlot();
  }

  private finish(): void {
    this.handlerFinished = true;
    if (this.localEnded) this.connection.releaseSlot();
  }
}
