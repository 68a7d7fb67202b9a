import { bytes, group, ping, STREAM_ID, WEIGHT_256, type CaseKit, type H2specCase } from './case.js';
import { ErrorCode, FrameType, Setting } from './frames.js';
import { field } from './hpack-encoder.js';
import type { PriorityParam } from './raw-client.js';
import { answered, pingAnswered, pingAnsweredOrClosed, sendClientPreface } from './shapes.js';
import { verifyEventType, verifyPingFrameWithAck, verifySettingsFrameWithAck, verifyStreamClose } from './verify.js';

/** h2spec's `generic` section, "Generic tests for HTTP/2 server" (generic/*.go), in h2spec's order. */

/** A half-closed (remote) stream the server cannot finish (SETTINGS_INITIAL_WINDOW_SIZE 0): `frames`, then DATA once the window opens. */
const onBlockedStream = (desc: string, frames: (k: CaseKit) => void) => ({
  desc,
  async run(k: CaseKit) {
    await k.conn.handshake();
    k.conn.writeSettings([Setting.INITIAL_WINDOW_SIZE, 0]);
    k.sendCheck();
    frames(k);
    k.conn.writeWindowUpdate(STREAM_ID, 1);
    return verifyEventType(k.conn, FrameType.DATA);
  },
});

const startingHttp2 = group('generic', '1', 'generic/1_starting_http2.go', [{ desc: 'Sends a client connection preface', run: sendClientPreface }]);

const streamsAndMultiplexing = group('generic', '2', 'generic/2_streams_and_multiplexing.go', [
  pingAnswered('Sends a PRIORITY frame on idle stream', ({ conn }) => conn.writePriority(STREAM_ID, WEIGHT_256), ping()),
  onBlockedStream('Sends a WINDOW_UPDATE frame on half-closed (remote) stream', () => undefined),
  onBlockedStream('Sends a PRIORITY frame on half-closed (remote) stream', ({ conn }) => conn.writePriority(STREAM_ID, WEIGHT_256)),
  pingAnsweredOrClosed(
    'Sends a RST_STREAM frame on half-closed (remote) stream',
    (k) => {
      k.sendCheck();
      k.conn.writeRstStream(STREAM_ID, ErrorCode.CANCEL);
    },
    ping(),
  ),
  {
    desc: 'Sends a PRIORITY frame on closed stream',
    async run(k) {
      await k.conn.handshake();
      k.sendCheck();
      await verifyStreamClose(k.conn);
      k.conn.writePriority(STREAM_ID, WEIGHT_256);
      k.conn.writePing(false, ping());
      return verifyPingFrameWithAck(k.conn, ping());
    },
  },
]);

const data = group('generic', '3.1', 'generic/3_1_data.go', [
  answered('Sends a DATA frame', (k) => k.sendCheck()),
  answered('Sends multiple DATA frames', (k) => {
    k.openCheck();
    const body = k.body();
    k.conn.writeData(STREAM_ID, false, body.subarray(0, 4));
    k.conn.writeData(STREAM_ID, true, body.subarray(4));
  }),
  answered('Sends a DATA frame with padding', (k) => {
    k.openCheck();
    k.conn.writeDataPadded(STREAM_ID, true, k.body(), Buffer.alloc(5));
  }),
]);

const headers = group('generic', '3.2', 'generic/3_2_headers.go', [
  answered('Sends a HEADERS frame', (k) => k.sendCheck()),
  answered('Sends a HEADERS frame with padding', (k) => k.sendCheck(STREAM_ID, { padLength: 8 })),
  answered('Sends a HEADERS frame with priority', (k) => k.sendCheck(STREAM_ID, { priority: WEIGHT_256 })),
]);

const priorityCases: [string, number, PriorityParam][] = [
  ['Sends a PRIORITY frame with priority 1', STREAM_ID, { streamDep: 0, exclusive: false, weight: 0 }],
  ['Sends a PRIORITY frame with priority 256', STREAM_ID, WEIGHT_256],
  ['Sends a PRIORITY frame with stream dependency', STREAM_ID + 2, { streamDep: STREAM_ID, exclusive: false, weight: 0 }],
  ['Sends a PRIORITY frame with exclusive', STREAM_ID, { streamDep: 0, exclusive: true, weight: 0 }],
  ['Sends a PRIORITY frame for an idle stream, then send a HEADER frame for a lower stream ID', STREAM_ID + 2, WEIGHT_256],
];
const priority = group(
  'generic',
  '3.3',
  'generic/3_3_priority.go',
  priorityCases.map(([desc, streamId, param]) =>
    answered(desc, (k) => {
      k.conn.writePriority(streamId, param);
      k.sendCheck();
    }),
  ),
);

const rstStream = group('generic', '3.4', 'generic/3_4_rst_stream.go', [
  pingAnsweredOrClosed(
    'Sends a RST_STREAM frame',
    (k) => {
      k.openCheck();
      k.conn.writeRstStream(STREAM_ID, ErrorCode.CANCEL);
    },
    ping(),
  ),
]);

const settings = group('generic', '3.5', 'generic/3_5_settings.go', [
  {
    desc: 'Sends a SETTINGS frame',
    async run({ conn }) {
      await conn.handshake();
      conn.writeSettings(
        [Setting.HEADER_TABLE_SIZE, 4096],
        [Setting.ENABLE_PUSH, 1],
        [Setting.MAX_CONCURRENT_STREAMS, 100],
        [Setting.INITIAL_WINDOW_SIZE, 65535],
        [Setting.MAX_FRAME_SIZE, 16384],
        [Setting.MAX_HEADER_LIST_SIZE, 100],
      );
      return verifySettingsFrameWithAck(conn);
    },
  },
]);

const pingGroup = group('generic', '3.7', 'generic/3_7_ping.go', [pingAnswered('Sends a PING frame', () => undefined, ping('h2spec'))]);

const goAway = group('generic', '3.8', 'generic/3_8_goaway.go', [
  pingAnsweredOrClosed('Sends a GOAWAY frame', ({ conn }) => conn.writeGoAway(0, ErrorCode.NO_ERROR, bytes('h2spec')), ping('h2spec')),
]);

const windowUpdate = group('generic', '3.9', 'generic/3_9_window_update.go', [
  pingAnswered('Sends a WINDOW_UPDATE frame with stream ID 0', ({ conn }) => conn.writeWindowUpdate(0, 1), ping()),
  answered('Sends a WINDOW_UPDATE frame with stream ID 1', (k) => {
    k.sendCheck();
    k.conn.writeWindowUpdate(STREAM_ID, 1);
  }),
]);

const continuation = group('generic', '3.10', 'generic/3_10_continuation.go', [
  answered('Sends a CONTINUATION frame', (k) => {
    const block = k.conn.encodeHeaders(k.headers());
    k.conn.writeHeaders({ streamId: STREAM_ID, endHeaders: false, blockFragment: block.subarray(0, 5) });
    k.conn.writeContinuation(STREAM_ID, true, block.subarray(5));
    k.checkData();
  }),
  answered('Sends multiple CONTINUATION frames', (k) => {
    const block = k.conn.encodeHeaders(k.headers());
    k.conn.writeHeaders({ streamId: STREAM_ID, endHeaders: false, blockFragment: block.subarray(0, 5) });
    k.conn.writeContinuation(STREAM_ID, false, block.subarray(5, 10));
    k.conn.writeContinuation(STREAM_ID, true, block.subarray(10));
    k.checkData();
  }),
]);

const httpMessageExchanges = group('generic', '4', 'generic/4_http_message_exchanges.go', [
  // A GET is, to authz, a Check.
  answered('Sends a GET request', (k) => k.sendCheck()),
  // h2spec's HEAD exactly (END_STREAM, no body) on the Check's path: whatever the gRPC
  // server answers a HEAD with is a HEADERS frame, which is all h2spec asks.
  answered('Sends a HEAD request', (k) => {
    const fields = k.headers().map((f) => (f.name === ':method' ? field(':method', 'HEAD') : f));
    k.openCheck(STREAM_ID, { fields, endStream: true });
  }),
  answered('Sends a POST request', (k) => k.sendCheck()),
  answered('Sends a POST request with trailers', (k) => {
    k.openCheck(STREAM_ID, { fields: [...k.headers(), field('trailer', 'x-test')] });
    k.conn.writeData(STREAM_ID, false, k.body());
    k.conn.writeHeaders({ streamId: STREAM_ID, endStream: true, endHeaders: true, blockFragment: k.conn.encodeHeaders([field('x-test', 'ok')]) });
  }),
]);

/**
 * h2spec's representations, appended to the request's block. Its "indexed name" cases
 * send index 0 (a new name) and its "never indexed - new name" case sends the Huffman
 * bytes: both as h2spec has them.
 */
const representations: [string, string][] = [
  ['Sends a indexed header field representation', '\xba'],
  ['Sends a literal header field with incremental indexing - indexed name', '\x40\x87\xb5\x05\xb1\x61\xcc\x5a\x93\x84\x9c\x48\xac\xa4'],
  ['Sends a literal header field with incremental indexing - indexed name (with Huffman coding)', '\x40\x0a\x75\x73\x65\x72\x2d\x61\x67\x65\x6e\x74\x06\x68\x32\x73\x70\x65\x63'],
  ['Sends a literal header field with incremental indexing - new name', '\x40\x06\x78\x2d\x74\x65\x73\x74\x06\x68\x32\x73\x70\x65\x63'],
  ['Sends a literal header field with incremental indexing - new name (with Huffman coding)', '\x40\x85\xf2\xb2\x4a\x84\xff\x84\x9c\x48\xac\xa4'],
  ['Sends a literal header field without indexing - indexed name', '\x00\x0a\x75\x73\x65\x72\x2d\x61\x67\x65\x6e\x74\x06\x68\x32\x73\x70\x65\x63'],
  ['Sends a literal header field without indexing - indexed name (with Huffman coding)', '\x00\x87\xb5\x05\xb1\x61\xcc\x5a\x93\x84\x9c\x48\xac\xa4'],
  ['Sends a literal header field without indexing - new name', '\x00\x06\x78\x2d\x74\x65\x73\x74\x06\x68\x32\x73\x70\x65\x63'],
  ['Sends a literal header field without indexing - new name (huffman encoded)', '\x00\x85\xf2\xb2\x4a\x84\xff\x84\x9c\x48\xac\xa4'],
  ['Sends a literal header field never indexed - indexed name', '\x10\x0a\x75\x73\x65\x72\x2d\x61\x67\x65\x6e\x74\x06\x68\x32\x73\x70\x65\x63'],
  ['Sends a literal header field never indexed - indexed name (huffman encoded)', '\x10\x87\xb5\x05\xb1\x61\xcc\x5a\x93\x84\x9c\x48\xac\xa4'],
  ['Sends a literal header field never indexed - new name', '\x10\x85\xf2\xb2\x4a\x84\xff\x84\x9c\x48\xac\xa4'],
  ['Sends a literal header field never indexed - new name (huffman encoded)', '\x10\x85\xf2\xb2\x4a\x84\xff\x84\x9c\x48\xac\xa4'],
];
const hpack = group('generic', '5', 'generic/5_hpack.go', [
  ...representations.map(([desc, representation]) =>
    answered(desc, (k) => k.sendCheck(STREAM_ID, { blockFragment: Buffer.concat([k.conn.encodeHeaders(k.headers()), bytes(representation)]) })),
  ),
  answered('Sends a dynamic table size update', (k) => {
    // The encoder's next block starts with a dynamic table size update to 128.
    k.conn.setMaxDynamicTableSize(128);
    k.sendCheck();
  }),
  answered('Sends multiple dynamic table size update', (k) => {
    // Two updates, to 128 and to 4,096, before the block.
    k.sendCheck(STREAM_ID, { blockFragment: Buffer.concat([bytes('\x3f\x61\x3f\xe1\x1f'), k.conn.encodeHeaders(k.headers())]) });
  }),
]);

export const GENERIC_CASES: H2specCase[] = [
  ...startingHttp2,
  ...streamsAndMultiplexing,
  ...data,
  ...headers,
  ...priority,
  ...rstStream,
  ...settings,
  ...pingGroup,
  ...goAway,
  ...windowUpdate,
  ...continuation,
  ...httpMessageExchanges,
  ...hpack,
];
