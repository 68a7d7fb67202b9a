import fc from 'fast-check';
import { FrameType } from '../../authz/http2/frames.js';
import { frame, settingsFrame, words } from './h2-attacker.js';
import { hpackInteger, hpackString, indexedField, literalField, runawayInteger, tableSizeUpdate, type LiteralKind } from './hpack-bytes.js';

/**
 * Structure-aware input for authz's HTTP/2 server (test/authz-http2-fuzz.test.ts): HPACK
 * blocks made of valid representations mixed with the hostile ones (integers that run on,
 * bad Huffman, indexes past the tables, table size updates above the limit), and frame
 * sequences of every type with random flags, stream ids and payloads, each well-formed for
 * its type or not. Frame lengths always match their payloads (a lie would only leave the
 * server waiting for bytes), except for frames declared above the largest frame size.
 */

const octets = (maxLength: number) => fc.uint8Array({ maxLength });
const latin1 = (maxLength: number) => fc.array(fc.integer({ min: 0x20, max: 0x7e }), { maxLength }).map((codes) => String.fromCharCode(...codes));

const fieldName: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(':method', ':scheme', ':path', ':authority', ':status', 'content-type', 'te', 'grpc-timeout', 'content-length', 'x-a', 'X-Upper', '', 'connection') },
  { weight: 2, arbitrary: latin1(12) },
  { weight: 1, arbitrary: octets(8) },
);
const fieldValue: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('POST', 'http', '/envoy.service.auth.v3.Authorization/Check', 'application/grpc', 'trailers', '10m', '0', ' padded ', 'a\u0000b', '') },
  { weight: 3, arbitrary: latin1(40) },
  { weight: 1, arbitrary: octets(12) },
  // Longer than the 4,096-byte table: evicts everything and is not added (RFC 7541 §4.4).
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 5_000 }).map((n) => 'v'.repeat(n)) },
);

/** Indexes: the static table, the dynamic one, and past both, up to integers too large to be any. */
const index = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 61 }) },
  { weight: 3, arbitrary: fc.integer({ min: 62, max: 200 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, 2 ** 31 - 1, 2 ** 31, 2 ** 40) },
);
const literalKind = fc.constantFrom<LiteralKind>('incremental', 'without-indexing', 'never-indexed');
const LITERAL_PATTERNS: readonly (readonly [number, number])[] = [
  [0x80, 7],
  [0x40, 6],
  [0x20, 5],
  [0x00, 4],
  [0x10, 4],
];

/** Continuation bytes of a runaway integer: a few, or around the 147 where zeros make NaN. */
const runLength = fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 140, max: 160 }), fc.integer({ min: 1, max: 200 }));
const runFill = fc.oneof({ weight: 3, arbitrary: fc.constant(0x80) }, { weight: 1, arbitrary: fc.constantFrom(0xff, 0x81) });

/** What §4.2 allows at a block's start: table size updates, within the limit or above it, or sizes that run on. */
const sizeUpdate: fc.Arbitrary<number[]> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 4_096 }).map(tableSizeUpdate) },
  { weight: 1, arbitrary: fc.integer({ min: 4_097, max: 2 ** 31 + 5 }).map(tableSizeUpdate) },
  { weight: 2, arbitrary: fc.record({ run: runLength, fill: runFill, last: fc.integer({ min: 0, max: 0x7f }) }).map(({ run, fill, last }) => runawayInteger(5, 0x20, run, fill, last)) },
);

/** Entries that fill the table: incremental literals, often large. */
const insertion: fc.Arbitrary<number[]> = fc
  .record({ name: fc.oneof(fc.integer({ min: 1, max: 61 }), fieldName), size: fc.integer({ min: 0, max: 4_200 }), huffman: fc.boolean() })
  .map(({ name, size, huffman }) => literalField('incremental', name, 'i'.repeat(size), { name: huffman, value: huffman }));

/** One representation (RFC 7541 §6), valid or one of the ways to break one. */
export const hpackRepresentation: fc.Arbitrary<number[]> = fc.oneof(
  { weight: 4, arbitrary: index.map(indexedField) },
  {
    weight: 6,
    arbitrary: fc
      .record({ kind: literalKind, name: fc.oneof(index, fieldName), value: fieldValue, huffmanName: fc.boolean(), huffmanValue: fc.boolean() })
      .map(({ kind, name, value, huffmanName, huffmanValue }) => literalField(kind, name, value, { name: huffmanName, value: huffmanValue })),
  },
  { weight: 3, arbitrary: insertion },
  // Out of place: §4.2 allows size updates at a block's start only.
  { weight: 1, arbitrary: sizeUpdate },
  {
    // An integer whose continuation bytes run on: zero bytes reach NaN in doubles past 147.
    weight: 2,
    arbitrary: fc.record({ form: fc.constantFrom(...LITERAL_PATTERNS), run: runLength, fill: runFill, last: fc.integer({ min: 0, max: 0x7f }) }).map(({ form: [pattern, prefixBits], run, fill, last }) => runawayInteger(prefixBits, pattern, run, fill, last)),
  },
  {
    // A string literal's length run on as well, inside an otherwise valid literal.
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 200 }).map((length) => [0x00, ...runawayInteger(7, 0x00, length), ...hpackString('v')]),
  },
  {
    // Huffman strings of random bits: invalid codes, EOS, padding too long or not all ones.
    weight: 2,
    arbitrary: fc.record({ name: fc.integer({ min: 1, max: 61 }), bits: octets(12) }).map(({ name, bits }) => [...hpackInteger(name, 4, 0x00), ...hpackInteger(bits.length, 7, 0x80), ...bits]),
  },
  { weight: 1, arbitrary: octets(8).map((bytes) => [...bytes]) },
);

/** A block: table size updates at its start, then representations; sometimes cut short or with one byte changed. */
export const hpackBlock: fc.Arbitrary<Buffer> = fc
  .record({
    leading: fc.array(sizeUpdate, { maxLength: 2 }),
    parts: fc.array(hpackRepresentation, { maxLength: 10 }),
    mutation: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.record({ cutAt: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ flipAt: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }) },
    ),
  })
  .map(({ leading, parts, mutation }) => {
    const block = Buffer.from([...leading.flat(), ...parts.flat()]);
    if (!mutation || block.length === 0) return block;
    if ('cutAt' in mutation) return block.subarray(0, mutation.cutAt % block.length);
    block[mutation.flipAt % block.length]! ^= mutation.xor;
    return block;
  });

const streamId = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(0, 1, 3, 5, 7, 9, 2, 4) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 ** 31 - 1 }) },
  // The reserved bit set (§4.1: "MUST be ignored when receiving").
  { weight: 1, arbitrary: fc.constantFrom(0x80000001, 0x80000000) },
);
const flags = fc.oneof(fc.constantFrom(0x0, 0x1, 0x4, 0x5, 0x8, 0x20, 0x24, 0x25, 0x2d), fc.integer({ min: 0, max: 255 }));
const wrongLength = (right: number) => fc.integer({ min: 0, max: right + 8 }).filter((n) => n !== right).chain((n) => fc.uint8Array({ minLength: n, maxLength: n }));
const windowIncrement = fc.oneof(fc.constantFrom(0, 1, 65_535, 2 ** 31 - 1, 2 ** 32 - 1), fc.nat());
const settingValue = fc.oneof(fc.constantFrom(0, 1, 2, 16_383, 16_384, 65_535, 2 ** 24 - 1, 2 ** 24, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1), fc.nat());

/** A padded payload (§6.1): pad length, data, padding; or a pad length the frame cannot hold. */
const padded = (data: fc.Arbitrary<Uint8Array>) =>
  fc.record({ data, pad: fc.integer({ min: 0, max: 255 }), honest: fc.boolean() }).map(({ data: bytes, pad, honest }) => {
    const padding = honest ? pad : Math.min(pad, 3);
    return Buffer.concat([Buffer.from([pad]), bytes, Buffer.alloc(padding)]);
  });

/** Payloads per frame type: well-formed ones, and ones of the wrong size or content. */
const payloadFor: Readonly<Record<number, fc.Arbitrary<Uint8Array>>> = {
  [FrameType.DATA]: fc.oneof(octets(64), padded(octets(32)), fc.constant(Buffer.from([0, 0, 0, 0, 3, 1, 2, 3])), fc.constant(Buffer.from([0, 0, 0x40, 0, 0]))),
  [FrameType.HEADERS]: fc.oneof(hpackBlock, padded(hpackBlock), fc.tuple(octets(5).filter((b) => b.length === 5), hpackBlock).map(([priority, block]) => Buffer.concat([priority, block]))),
  [FrameType.PRIORITY]: fc.oneof(fc.uint8Array({ minLength: 5, maxLength: 5 }), wrongLength(5)),
  [FrameType.RST_STREAM]: fc.oneof(fc.integer({ min: 0, max: 0x10 }).map((code) => words(code)), wrongLength(4)),
  [FrameType.SETTINGS]: fc.oneof(
    fc.array(fc.tuple(fc.integer({ min: 0, max: 10 }), settingValue), { maxLength: 8 }).map((entries) => settingsFrame(entries).subarray(9)),
    fc.integer({ min: 1, max: 20 }).filter((n) => n % 6 !== 0).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
  ),
  [FrameType.PUSH_PROMISE]: octets(16),
  [FrameType.PING]: fc.oneof(fc.uint8Array({ minLength: 8, maxLength: 8 }), wrongLength(8)),
  [FrameType.GOAWAY]: fc.oneof(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 0x10 }), octets(8)).map(([last, code, debug]) => Buffer.concat([words(last, code), debug])), wrongLength(8)),
  [FrameType.WINDOW_UPDATE]: fc.oneof(windowIncrement.map((increment) => words(increment)), wrongLength(4)),
  [FrameType.CONTINUATION]: hpackBlock,
};

const knownFrame = fc
  .integer({ min: FrameType.DATA, max: FrameType.CONTINUATION })
  .chain((type) => fc.record({ type: fc.constant(type), flags, streamId, payload: payloadFor[type]! }))
  .map(({ type, flags: f, streamId: id, payload }) => frame(type, f, id, payload));
const unknownFrame = fc.record({ type: fc.integer({ min: 0x0a, max: 0xff }), flags, streamId, payload: octets(32) }).map(({ type, flags: f, streamId: id, payload }) => frame(type, f, id, payload));
/** Above SETTINGS_MAX_FRAME_SIZE (16,384, never raised by the server): FRAME_SIZE_ERROR (§4.2). */
const oversizedFrame = fc.record({ type: fc.integer({ min: 0, max: 0x0a }), length: fc.integer({ min: 16_385, max: 20_000 }) }).map(({ type, length }) => frame(type, 0, 1, Buffer.alloc(length)));

/** A whole unary call on `id`: HEADERS with `head`, DATA with `body`, END_STREAM. */
export function callFrames(id: number, head: Buffer, body: Buffer): Buffer {
  return Buffer.concat([frame(FrameType.HEADERS, 0x4, id, head), frame(FrameType.DATA, 0x1, id, body)]);
}

export interface FrameSequence {
  /** Whether the client preface's SETTINGS comes first, as §3.4 requires. */
  settingsFirst: boolean;
  frames: Buffer[];
  /** The client sent GOAWAY: the server may close without one of its own. */
  clientGoAway: boolean;
}

/** Stream ids as a well-behaved client would use them: each new stream the next odd id; frames for a stream on one it opened. */
interface StreamIds {
  next(): number;
  /** A stream opened earlier, `back` streams ago (the first if fewer); undefined before any. */
  recent(back: number): number | undefined;
}

/** One item of a sequence: its frames, given the ids so far. */
type Item = (ids: StreamIds) => Buffer;

const onStream = (id: number | undefined, build: (id: number) => Buffer): Buffer => (id === undefined ? Buffer.alloc(0) : build(id));

/** Frames a conforming client sends: whole calls, calls split over CONTINUATION and DATA frames, and control frames with valid payloads. */
function conformingItems(head: Buffer, body: Buffer): fc.Arbitrary<Item> {
  const cut = (bytes: Buffer, at: number) => [bytes.subarray(0, at % (bytes.length + 1)), bytes.subarray(at % (bytes.length + 1))] as const;
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant<Item>((ids) => callFrames(ids.next(), head, body)) },
    {
      weight: 2,
      arbitrary: fc.record({ headAt: fc.nat(), bodyAt: fc.nat() }).map(({ headAt, bodyAt }): Item => (ids) => {
        const id = ids.next();
        const [head1, head2] = cut(head, headAt);
        const [body1, body2] = cut(body, bodyAt);
        return Buffer.concat([frame(FrameType.HEADERS, 0, id, head1), frame(FrameType.CONTINUATION, 0x4, id, head2), frame(FrameType.DATA, 0, id, body1), frame(FrameType.DATA, 0x1, id, body2)]);
      }),
    },
    // A stream left open: its handler waits for the rest of its message.
    { weight: 1, arbitrary: fc.constant<Item>((ids) => frame(FrameType.HEADERS, 0x4, ids.next(), head)) },
    // §5.1: RST_STREAM and WINDOW_UPDATE only on streams opened already (on an idle one they are a connection error).
    { weight: 2, arbitrary: fc.record({ back: fc.nat(3), code: fc.integer({ min: 0, max: 13 }) }).map(({ back, code }): Item => (ids) => onStream(ids.recent(back), (id) => frame(FrameType.RST_STREAM, 0, id, words(code)))) },
    {
      weight: 2,
      arbitrary: fc.record({ back: fc.oneof(fc.constant(-1), fc.nat(3)), increment: fc.integer({ min: 1, max: 2 ** 20 }) }).map(({ back, increment }): Item => (ids) => onStream(back < 0 ? 0 : ids.recent(back), (id) => frame(FrameType.WINDOW_UPDATE, 0, id, words(increment)))),
    },
    {
      // PRIORITY may name any stream, idle ones included (§5.1), but not make one depend on itself.
      weight: 1,
      arbitrary: fc.record({ stream: fc.integer({ min: 1, max: 1_000 }), weight: fc.integer({ min: 0, max: 255 }), exclusive: fc.boolean() }).map(({ stream, weight, exclusive }): Item => () => {
        const payload = Buffer.concat([words(((exclusive ? 0x80000000 : 0) | (stream + 2)) >>> 0), Buffer.from([weight])]);
        return frame(FrameType.PRIORITY, 0, stream, payload);
      }),
    },
    { weight: 2, arbitrary: fc.record({ ack: fc.boolean(), payload: fc.uint8Array({ minLength: 8, maxLength: 8 }) }).map(({ ack, payload }): Item => () => frame(FrameType.PING, ack ? 0x1 : 0, 0, payload)) },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.oneof(fc.tuple(fc.constant(1), fc.integer({ min: 0, max: 65_536 })), fc.tuple(fc.constant(3), fc.nat(1_000)), fc.tuple(fc.constant(4), fc.integer({ min: 0, max: 2 ** 31 - 1 })), fc.tuple(fc.constant(5), fc.integer({ min: 16_384, max: 2 ** 24 - 1 })), fc.tuple(fc.constant(6), fc.nat())), { maxLength: 6 })
        .map((entries): Item => () => settingsFrame(entries)),
    },
  );
}

/**
 * What a client may send after its preface: conforming frames with a few of every type,
 * random flags, ids and payloads among them (none at all in some sequences, so the server
 * gets deep into a connection before anything breaks it).
 */
export function frameSequence(head: Buffer, body: Buffer): fc.Arbitrary<FrameSequence> {
  const raw = (arbitrary: fc.Arbitrary<Buffer>) => arbitrary.map((bytes): Item => () => bytes);
  const hostile = fc.oneof({ weight: 8, arbitrary: raw(knownFrame) }, { weight: 1, arbitrary: raw(unknownFrame) }, { weight: 1, arbitrary: raw(oversizedFrame) });
  return fc
    .record({
      settingsFirst: fc.oneof({ weight: 19, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      conforming: fc.array(conformingItems(head, body), { maxLength: 25 }),
      hostile: fc.oneof(fc.constant([]), fc.array(fc.tuple(fc.nat(), hostile), { minLength: 1, maxLength: 3 })),
    })
    .map(({ settingsFirst, conforming, hostile: inserted }) => {
      const items = [...conforming];
      for (const [at, item] of inserted) items.splice(at % (items.length + 1), 0, item);
      const opened: number[] = [];
      const ids: StreamIds = {
        next: () => {
          opened.push(2 * opened.length + 1);
          return opened.at(-1)!;
        },
        recent: (back) => opened[opened.length - 1 - Math.min(back, opened.length - 1)],
      };
      const frames = items.map((build) => build(ids));
      return { settingsFirst, frames, clientGoAway: frames.some((bytes) => bytes[3] === FrameType.GOAWAY) };
    });
}
