/** HTTP/2's frame layout and codes (RFC 9113 §4.1, §6, §7, §11), as authz's server writes and reads them. */

export const FRAME_HEADER_BYTES = 9;

/** RFC 9113 §3.4: "the string PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", then a SETTINGS frame. */
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

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** §6.5.2 and §6.9.1: the defaults until SETTINGS say otherwise, and the largest window. */
export const DEFAULT_WINDOW_SIZE = 65_535;
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
export const MAX_WINDOW_SIZE = 2 ** 31 - 1;
export const MAX_FRAME_SIZE_LIMIT = 2 ** 24 - 1;

/** Writes a frame header at `at` in `target`. */
export function writeFrameHeader(target: Buffer, at: number, length: number, type: number, flags: number, streamId: number): void {
  target[at] = length >>> 16;
  target[at + 1] = (length >>> 8) & 0xff;
  target[at + 2] = length & 0xff;
  target[at + 3] = type;
  target[at + 4] = flags;
  target.writeUInt32BE(streamId, at + 5);
}

export function encodeFrame(type: number, flags: number, streamId: number, payload?: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + (payload?.length ?? 0));
  writeFrameHeader(frame, 0, payload?.length ?? 0, type, flags, streamId);
  if (payload) frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

/** A payload of 32-bit big-endian words: WINDOW_UPDATE, RST_STREAM, GOAWAY. */
export function words(...values: number[]): Buffer {
  const payload = Buffer.allocUnsafe(values.length * 4);
  values.forEach((value, i) => payload.writeUInt32BE(value, i * 4));
  return payload;
}

/** A SETTINGS payload: each setting a 16-bit identifier and a 32-bit value (§6.5.1). */
export function settingsPayload(settings: ReadonlyArray<readonly [number, number]>): Buffer {
  const payload = Buffer.allocUnsafe(settings.length * 6);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return payload;
}
