import { status as GrpcStatus } from '@grpc/grpc-js';

/**
 * gRPC's wire format over HTTP/2, as grpc/grpc doc/PROTOCOL-HTTP2.md defines it: what
 * authz's lean server (authz/grpc-server.ts) and the local edge's lean client need
 * beside node:http2 itself. grpc-js stays for everything off the hot path.
 */

export { GrpcStatus };

/** grpc-js's default limit on a received message, kept so no caller sees a change. */
export const MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024;

const PREFIX_BYTES = 5;

/**
 * Envoy's rule for a gRPC content-type, on requests and responses alike: "exactly
 * application/grpc or starts with application/grpc+. Specifically, something like
 * application/grpc-web is not gRPC" (envoyproxy/envoy source/common/grpc/common.cc,
 * `Common::hasGrpcContentType`; `Common::isGrpcResponseHeaders` applies it to every
 * response head that does not end the stream). A plain prefix test would take grpc-web.
 */
export function isGrpcContentType(value: string | undefined): boolean {
  if (value === undefined || !value.startsWith('application/grpc')) return false;
  return value.length === 'application/grpc'.length || value['application/grpc'.length] === '+';
}

/** Length-Prefixed-Message: Compressed-Flag 0, Message-Length (4 bytes, big endian), Message. */
export function frameMessage(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(PREFIX_BYTES + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, PREFIX_BYTES);
  return framed;
}

/** A message stream that cannot be read on: the call ends with `code`. */
export class FramingError extends Error {
  constructor(
    readonly code: GrpcStatus,
    message: string,
  ) {
    super(message);
    this.name = 'FramingError';
  }
}

/**
 * Cuts the bytes of a call's DATA frames into messages. "DATA frame boundaries have no
 * relation to Length-Prefixed-Message boundaries" (PROTOCOL-HTTP2.md, Data Frames), so a
 * message may arrive in pieces and one chunk may hold several. Nothing here accepts a
 * compressed message: neither side ever offers an encoding (grpc-accept-encoding is
 * identity), and "if the Message-Encoding header is omitted then the Compressed-Flag must be 0".
 */
export class MessageDeframer {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Prefix plus message bytes of the message being read; 0 while its prefix is incomplete. */
  private expected = 0;

  constructor(private readonly maxMessageBytes = MAX_RECEIVE_MESSAGE_BYTES) {}

  /** The messages `chunk` completes, in order (views of the received bytes, never copies of a whole chunk). */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: Buffer[] = [];
    for (;;) {
      if (this.expected === 0) {
        if (this.buffered < PREFIX_BYTES) break;
        this.expected = PREFIX_BYTES + this.messageLength(this.head(PREFIX_BYTES));
      }
      if (this.buffered < this.expected) break;
      const bytes = this.head(this.buffered);
      messages.push(bytes.subarray(PREFIX_BYTES, this.expected));
      const rest = bytes.subarray(this.expected);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.buffered = rest.length;
      this.expected = 0;
    }
    return messages;
  }

  /** Bytes held for a message not yet whole: what a caller's flow control has not yet given back. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /** True when the stream stopped partway through a message. */
  get midMessage(): boolean {
    return this.buffered > 0;
  }

  /** At least the first `bytes` buffered bytes, contiguous: copies only when they span chunks. */
  private head(bytes: number): Buffer {
    if (this.chunks[0]!.length >= bytes) return this.chunks[0]!;
    const joined = Buffer.concat(this.chunks, this.buffered);
    this.chunks = [joined];
    return joined;
  }

  private messageLength(prefix: Buffer): number {
    if (prefix[0] !== 0) throw new FramingError(GrpcStatus.INTERNAL, 'received a compressed message, but no message encoding was agreed');
    const length = prefix.readUInt32BE(1);
    if (length > this.maxMessageBytes) {
      throw new FramingError(GrpcStatus.RESOURCE_EXHAUSTED, `received a message of ${length} bytes, more than the ${this.maxMessageBytes} allowed`);
    }
    return length;
  }
}

/**
 * grpc-timeout for a deadline `ms` from now: "TimeoutValue: positive integer as ASCII string
 * of at most 8 digits", in milliseconds while it fits, else whole seconds (rounded up, so
 * the callee never gets less time than the caller gives).
 */
export function grpcTimeoutHeader(ms: number): string {
  const millis = Math.max(1, Math.ceil(ms));
  return millis < 1e8 ? `${millis}m` : `${Math.min(99_999_999, Math.ceil(millis / 1000))}S`;
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * A grpc-timeout's milliseconds, or undefined when the value is not one: "TimeoutValue
 * TimeoutUnit", at most 8 digits, the unit one of H M S m u n (PROTOCOL-HTTP2.md, Requests).
 */
export function parseGrpcTimeout(value: string): number | undefined {
  const match = /^([0-9]{1,8})([HMSmun])$/.exec(value);
  return match ? Number(match[1]) * TIMEOUT_UNIT_MS[match[2]!]! : undefined;
}

/**
 * grpc-message's Percent-Encoded form: bytes of the UTF-8 text outside %x20-%x24 and
 * %x26-%x7E as %XX.
 */
export function encodeGrpcMessage(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let encoded = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    encoded += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return encoded;
}

/** The text of a grpc-message; an invalid encoding is returned as sent, as the spec allows. */
export function decodeGrpcMessage(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
