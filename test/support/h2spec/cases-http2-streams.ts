import { bytes, dummyHeaders, group, ping, SkippedCase, STREAM_ID, type CaseKit, type H2specCase } from './case.js';
import { ErrorCode, FrameType, Setting } from './frames.js';
import type { PriorityParam } from './raw-client.js';
import { answered, connectionError, interruptedBlock, interruptions, pingAnswered, sendClientPreface, streamError } from './shapes.js';
import { verifyConnectionClose, verifyConnectionError, verifyEventType, verifyGoAwayReceived, verifyStreamClose, verifyStreamError } from './verify.js';

/** h2spec's `http2` section, RFC 7540 §3 to §5 (http2/3_*.go, 4_*.go, 5_*.go), in h2spec's order. */

/** h2spec's unknown frame: "Length: 8, Type: 255" in its comment, type 0x16 in its bytes. */
const UNKNOWN_FRAME = bytes('\x00\x00\x08\x16\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00');
/** A PING frame on stream 3. */
const PING_ON_STREAM_3 = bytes('\x00\x00\x08\x06\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00');

const connectionPreface = group('http2', '3.5', 'http2/3_5_http2_connection_preface.go', [
  { desc: 'Sends client connection preface', run: sendClientPreface },
  {
    desc: 'Sends invalid connection preface',
    async run({ conn }) {
      conn.send(bytes('INVALID CONNECTION PREFACE\r\n\r\n'));
      return verifyConnectionError(conn, ErrorCode.PROTOCOL_ERROR);
    },
  },
]);

/** A PING frame with this frame header: VerifyEventType(PING), any PING answers. */
const pingWithHeaderAnswered = (desc: string, header: string) => ({
  desc,
  async run({ conn }: CaseKit) {
    await conn.handshake();
    conn.send(Buffer.concat([bytes(header), Buffer.alloc(8)]));
    return verifyEventType(conn, FrameType.PING);
  },
});

const frameFormat = group('http2', '4.1', 'http2/4_1_frame_format.go', [
  pingAnswered('Sends a frame with unknown type', ({ conn }) => conn.send(UNKNOWN_FRAME), ping()),
  // A PING with flags 0x16 (none of them ACK), then with the reserved bit set too: answered.
  pingWithHeaderAnswered('Sends a frame with undefined flag', '\x00\x00\x08\x06\x16\x00\x00\x00\x00'),
  pingWithHeaderAnswered('Sends a frame with reserved field bit', '\x00\x00\x08\x06\x16\x80\x00\x00\x00'),
]);

const frameSize = group('http2', '4.2', 'http2/4_2_frame_size.go', [
  // h2spec's DummyString(MaxFrameSize()) is the body: here a CheckRequest of exactly that size.
  answered('Sends a DATA frame with 2^14 octets in length', (k) => {
    k.openCheck();
    k.conn.writeData(STREAM_ID, true, k.body(k.conn.maxFrameSize()));
  }),
  streamError(
    'Sends a large size DATA frame that exceeds the SETTINGS_MAX_FRAME_SIZE',
    (k) => {
      k.openCheck();
      k.conn.writeData(STREAM_ID, true, k.body(k.conn.maxFrameSize() + 1));
    },
    ErrorCode.FRAME_SIZE_ERROR,
  ),
  connectionError(
    'Sends a large size HEADERS frame that exceeds the SETTINGS_MAX_FRAME_SIZE',
    (k) => k.sendCheck(STREAM_ID, { fields: [...k.headers(), ...dummyHeaders(5)] }),
    ErrorCode.FRAME_SIZE_ERROR,
  ),
]);

const headerCompression = group('http2', '4.3', 'http2/4_3_header_compression_and_decompression.go', [
  // A literal with incremental indexing and nothing after it.
  connectionError('Sends invalid header block fragment', ({ conn }) => conn.send(bytes('\x00\x00\x01\x01\x05\x00\x00\x00\x01\x40')), ErrorCode.COMPRESSION_ERROR),
  interruptedBlock('Sends a PRIORITY frame while sending the header blocks', interruptions.priority),
  interruptedBlock('Sends a HEADERS frame to another stream while sending the header blocks', interruptions.headers),
]);

/** The Check's stream, then closed by the server's answer (VerifyStreamClose), then `after`. */
const afterStreamClose = (desc: string, after: (k: CaseKit, block: Buffer) => void, verify: (k: CaseKit) => Promise<void>) => ({
  desc,
  async run(k: CaseKit) {
    await k.conn.handshake();
    const block = k.sendCheck();
    await verifyStreamClose(k.conn);
    after(k, block);
    return verify(k);
  },
});

/** A stream the client opened (HEADERS without END_STREAM) and reset with CANCEL. */
const resetByClient = (k: CaseKit) => {
  k.openCheck();
  k.conn.writeRstStream(STREAM_ID, ErrorCode.CANCEL);
};

const streamStates = group('http2', '5.1', 'http2/5_1_stream_states.go', [
  // h2spec takes STREAM_CLOSED too, as §6.1 reads.
  streamError('idle: Sends a DATA frame', ({ conn }) => conn.writeData(STREAM_ID, true, bytes('test')), ErrorCode.PROTOCOL_ERROR, ErrorCode.STREAM_CLOSED),
  connectionError('idle: Sends a RST_STREAM frame', ({ conn }) => conn.writeRstStream(STREAM_ID, ErrorCode.CANCEL), ErrorCode.PROTOCOL_ERROR),
  connectionError('idle: Sends a WINDOW_UPDATE frame', ({ conn }) => conn.writeWindowUpdate(STREAM_ID, 100), ErrorCode.PROTOCOL_ERROR),
  connectionError('idle: Sends a CONTINUATION frame', (k) => k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(k.headers())), ErrorCode.PROTOCOL_ERROR),
  streamError(
    'half closed (remote): Sends a DATA frame',
    (k) => {
      k.sendCheck();
      k.conn.writeData(STREAM_ID, true, bytes('test'));
    },
    ErrorCode.STREAM_CLOSED,
  ),
  streamError(
    'half closed (remote): Sends a HEADERS frame',
    (k) => {
      k.sendCheck();
      k.openCheck(STREAM_ID, { endStream: true });
    },
    ErrorCode.STREAM_CLOSED,
  ),
  streamError(
    'half closed (remote): Sends a CONTINUATION frame',
    (k) => k.conn.writeContinuation(STREAM_ID, true, k.sendCheck()),
    ErrorCode.STREAM_CLOSED,
    ErrorCode.PROTOCOL_ERROR,
  ),
  streamError(
    'closed: Sends a DATA frame after sending RST_STREAM frame',
    (k) => {
      resetByClient(k);
      k.conn.writeData(STREAM_ID, true, bytes('test'));
    },
    ErrorCode.STREAM_CLOSED,
  ),
  streamError(
    'closed: Sends a HEADERS frame after sending RST_STREAM frame',
    (k) => {
      resetByClient(k);
      k.openCheck(STREAM_ID, { endStream: true });
    },
    ErrorCode.STREAM_CLOSED,
  ),
  streamError(
    'closed: Sends a CONTINUATION frame after sending RST_STREAM frame',
    (k) => {
      resetByClient(k);
      k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(dummyHeaders(1)));
    },
    ErrorCode.STREAM_CLOSED,
    ErrorCode.PROTOCOL_ERROR,
  ),
  afterStreamClose(
    'closed: Sends a DATA frame',
    ({ conn }) => conn.writeData(STREAM_ID, true, bytes('test')),
    (k) => verifyStreamError(k.conn, ErrorCode.STREAM_CLOSED),
  ),
  // h2spec sends its request's HEADERS frame again: here the Check's.
  afterStreamClose(
    'closed: Sends a HEADERS frame',
    ({ conn }, block) => conn.writeHeaders({ streamId: STREAM_ID, endHeaders: true, blockFragment: block }),
    (k) => verifyConnectionError(k.conn, ErrorCode.STREAM_CLOSED),
  ),
  afterStreamClose(
    'closed: Sends a CONTINUATION frame',
    ({ conn }) => conn.writeContinuation(STREAM_ID, true, conn.encodeHeaders(dummyHeaders(1))),
    (k) => verifyConnectionError(k.conn, ErrorCode.STREAM_CLOSED, ErrorCode.PROTOCOL_ERROR),
  ),
]);

const streamIdentifiers = group('http2', '5.1.1', 'http2/5_1_1_stream_identifiers.go', [
  connectionError('Sends even-numbered stream identifier', (k) => k.sendCheck(2), ErrorCode.PROTOCOL_ERROR),
  connectionError(
    'Sends stream identifier that is numerically smaller than previous',
    (k) => {
      k.sendCheck(5);
      k.sendCheck(3);
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
]);

const streamConcurrency = group('http2', '5.1.2', 'http2/5_1_2_stream_concurrency.go', [
  {
    desc: 'Sends HEADERS frames that causes their advertised concurrent stream limit to be exceeded',
    async run(k) {
      await k.conn.handshake();
      const maxStreams = k.conn.settings.get(Setting.MAX_CONCURRENT_STREAMS);
      if (maxStreams === undefined) throw new SkippedCase('h2spec skips a server without SETTINGS_MAX_CONCURRENT_STREAMS');
      // A window of 0 keeps every answer, and so every stream, open.
      k.conn.writeSettings([Setting.INITIAL_WINDOW_SIZE, 0]);
      const blockFragment = k.conn.encodeHeaders(k.headers());
      for (let i = 0; i <= maxStreams; i += 1) k.sendCheck(STREAM_ID + 2 * i, { blockFragment });
      return verifyStreamError(k.conn, ErrorCode.PROTOCOL_ERROR, ErrorCode.REFUSED_STREAM);
    },
  },
]);

const selfDependency: PriorityParam = { streamDep: STREAM_ID, exclusive: false, weight: 255 };
const streamDependencies = group('http2', '5.3.1', 'http2/5_3_1_stream_dependencies.go', [
  streamError('Sends HEADERS frame that depends on itself', (k) => k.sendCheck(STREAM_ID, { priority: selfDependency }), ErrorCode.PROTOCOL_ERROR),
  streamError('Sends PRIORITY frame that depend on itself', ({ conn }) => conn.writePriority(STREAM_ID, selfDependency), ErrorCode.PROTOCOL_ERROR),
]);

const connectionErrorHandling = group('http2', '5.4.1', 'http2/5_4_1_connection_error_handling.go', [
  {
    desc: 'Sends an invalid PING frame for connection close',
    async run({ conn }) {
      await conn.handshake();
      conn.send(PING_ON_STREAM_3);
      return verifyConnectionClose(conn);
    },
  },
  {
    desc: 'Sends an invalid PING frame to receive GOAWAY frame',
    strict: true,
    async run({ conn }) {
      await conn.handshake();
      conn.send(PING_ON_STREAM_3);
      return verifyGoAwayReceived(conn, ErrorCode.PROTOCOL_ERROR);
    },
  },
]);

const extendingHttp2 = group('http2', '5.5', 'http2/5_5_extending_http2.go', [
  pingAnswered('Sends an unknown extension frame', ({ conn }) => conn.send(UNKNOWN_FRAME), ping()),
  // h2spec's HEADERS ends its stream but not its block: sent as it is, the block never completes.
  connectionError(
    'Sends an unknown extension frame in the middle of a header block',
    (k) => {
      k.openCheck(STREAM_ID, { endStream: true, endHeaders: false });
      k.conn.send(UNKNOWN_FRAME);
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
]);

export const HTTP2_STREAM_CASES: H2specCase[] = [
  ...connectionPreface,
  ...frameFormat,
  ...frameSize,
  ...headerCompression,
  ...streamStates,
  ...streamIdentifiers,
  ...streamConcurrency,
  ...streamDependencies,
  ...connectionErrorHandling,
  ...extendingHttp2,
];
