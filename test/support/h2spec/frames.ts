/**
 * HTTP/2 frames as h2spec's client reads them (golang.org/x/net http2's Framer at
 * 55a3084c9119, frame.go): the frame types, flags and error codes, each frame the server
 * sends parsed with Go's checks (a frame Go's parser refuses becomes an error event, as in
 * h2spec), and h2spec's events (spec/event.go) with their descriptions. The constants are
 * written out here, not taken from authz/http2/frames.ts, so that the client cannot
 * inherit a mistake of the server it tests.
 */

export const FRAME_HEADER_BYTES = 9;
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;

export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** spec/connection.go: DefaultWindowSize, DefaultFrameSize. */
export const DEFAULT_WINDOW_SIZE = 65_535;
export const DEFAULT_FRAME_SIZE = 16_384;

const TYPE_NAMES = Object.fromEntries(Object.entries(FrameType).map(([name, type]) => [type, name])) as Record<number, string>;
const CODE_NAMES = Object.fromEntries(Object.entries(ErrorCode).map(([name, code]) => [code, name])) as Record<number, string>;

/** Go's ErrCode.String(). */
export const errorCodeName = (code: number) => CODE_NAMES[code] ?? `unknown error code 0x${code.toString(16)}`;

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  /** The frame header's length: the whole payload, padding included. */
  length: number;
  payload: Buffer;
}

export type H2Event =
  | { kind: 'frame'; frame: Frame }
  /** spec.ConnectionClosedEvent: io.EOF or ECONNRESET on read. */
  | { kind: 'closed' }
  /** spec.TimeoutEvent: nothing within the connection's timeout. */
  | { kind: 'timeout' }
  /** spec.ErrorEvent: a frame Go's parser refuses, or another read error. */
  | { kind: 'error'; message: string };

export const frameOf = (event: H2Event | undefined, type: number): Frame | undefined =>
  event?.kind === 'frame' && event.frame.type === type ? event.frame : undefined;

/** RST_STREAM's code, or GOAWAY's (after its last stream id). */
export function errorCodeOf(frame: Frame): number {
  return frame.type === FrameType.GOAWAY ? frame.payload.readUInt32BE(4) : frame.payload.readUInt32BE(0);
}

/** spec/event.go's String(), plus the error code of RST_STREAM and GOAWAY (what a reader needs to fix the server). */
export function describe(event: H2Event | undefined): string {
  if (!event) return 'nothing';
  if (event.kind === 'closed') return 'Connection closed';
  if (event.kind === 'timeout') return 'Timeout';
  if (event.kind === 'error') return `Error: ${event.message}`;
  const { type, flags, streamId, length } = event.frame;
  const name = TYPE_NAMES[type] ?? `UNKNOWN_FRAME_TYPE_${type}`;
  const code = type === FrameType.RST_STREAM || type === FrameType.GOAWAY ? `, error_code:${errorCodeName(errorCodeOf(event.frame))}` : '';
  return `${name} Frame (length:${length}, flags:0x${flags.toString(16).padStart(2, '0')}, stream_id:${streamId}${code})`;
}

/** Go's typeFrameParser checks on what the server sent: the reason it would refuse the frame, or undefined. */
export function refusal({ type, flags, streamId, payload }: Frame): string | undefined {
  const padded = (flags & Flag.PADDED) !== 0;
  switch (type) {
    case FrameType.DATA:
      if (streamId === 0) return 'DATA frame with stream ID 0';
      if (padded && (payload.length === 0 || payload[0]! >= payload.length)) return 'pad size larger than data payload';
      return undefined;
    case FrameType.HEADERS: {
      if (streamId === 0) return 'HEADERS frame with stream ID 0';
      const overhead = (padded ? 1 + (payload[0] ?? 0) : 0) + (flags & Flag.PRIORITY ? 5 : 0);
      return payload.length - overhead <= 0 ? 'HEADERS frame with no header block fragment' : undefined;
    }
    case FrameType.PRIORITY:
      if (streamId === 0) return 'PRIORITY frame with stream ID 0';
      return payload.length === 5 ? undefined : 'PRIORITY frame of the wrong size';
    case FrameType.RST_STREAM:
      if (payload.length !== 4) return 'RST_STREAM frame of the wrong size';
      return streamId === 0 ? 'RST_STREAM frame with stream ID 0' : undefined;
    case FrameType.SETTINGS:
      if (flags & Flag.ACK && payload.length > 0) return 'SETTINGS ACK with a payload';
      if (streamId !== 0) return 'SETTINGS frame on a stream';
      return payload.length % 6 === 0 ? undefined : 'SETTINGS frame of the wrong size';
    case FrameType.PING:
      if (payload.length !== 8) return 'PING frame of the wrong size';
      return streamId === 0 ? undefined : 'PING frame on a stream';
    case FrameType.GOAWAY:
      if (streamId !== 0) return 'GOAWAY frame on a stream';
      return payload.length < 8 ? 'GOAWAY frame too short' : undefined;
    case FrameType.WINDOW_UPDATE:
      if (payload.length !== 4) return 'WINDOW_UPDATE frame of the wrong size';
      return (payload.readUInt32BE(0) & 0x7fffffff) === 0 ? 'WINDOW_UPDATE with an increment of 0' : undefined;
    case FrameType.CONTINUATION:
      return streamId === 0 ? 'CONTINUATION frame with stream ID 0' : undefined;
    default:
      return undefined;
  }
}

export function encodeFrame(type: number, flags: number, streamId: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const frame = Buffer.alloc(FRAME_HEADER_BYTES + payload.length);
  frame.writeUIntBE(payload.length, 0, 3);
  frame[3] = type;
  frame[4] = flags;
  frame.writeUInt32BE(streamId >>> 0, 5);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

export function uint32s(...values: number[]): Buffer {
  const payload = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => payload.writeUInt32BE(value >>> 0, i * 4));
  return payload;
}
