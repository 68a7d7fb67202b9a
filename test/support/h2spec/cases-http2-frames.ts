import { bytes, dummyHeaders, group, ping, SkippedCase, STREAM_ID, type CaseKit, type H2specCase } from './case.js';
import { ErrorCode, FrameType, Setting } from './frames.js';
import { field } from './hpack-encoder.js';
import { answered, connectionError, interruptedBlock, interruptions, pingAnswered, pingAnsweredOrClosed, streamError } from './shapes.js';
import {
  verifyDataFrameLength,
  verifyEventType,
  verifyGoAwayFrame,
  verifyRstStreamFrame,
  verifySettingsFrameWithAck,
} from './verify.js';

/** h2spec's `http2` section, RFC 7540 §6 and §7 (http2/6_*.go, 7_*.go), in h2spec's order. */

const MAX_WINDOW = 2 ** 31 - 1;

/** Raw bytes after the handshake: VerifyConnectionError with `codes`. */
const rawConnectionError = (desc: string, latin1: string, ...codes: number[]) => connectionError(desc, ({ conn }) => conn.send(bytes(latin1)), ...codes);

/** A Check, then raw bytes on its stream: VerifyStreamError with `code`. */
const rawAfterCheck = (desc: string, latin1: string, code: number) =>
  streamError(
    desc,
    (k) => {
      k.sendCheck();
      k.conn.send(bytes(latin1));
    },
    code,
  );

/**
 * The flow-control cases: h2spec skips them for a server whose answer carries fewer than
 * `minimum` DATA bytes (ServerDataLength); a Check's answer carries its CheckResponse.
 */
const withAnswerOfAtLeast = (minimum: number, desc: string, run: (k: CaseKit) => Promise<void>) => ({
  desc,
  async run(k: CaseKit) {
    if ((await k.serverDataLength()) < minimum) throw new SkippedCase(`the answer has fewer than ${minimum} DATA bytes`);
    await k.conn.handshake();
    return run(k);
  },
});

const setInitialWindowSize = async (k: CaseKit, ...sizes: number[]) => {
  k.conn.writeSettings(...sizes.map((size) => [Setting.INITIAL_WINDOW_SIZE, size] as const));
  await verifySettingsFrameWithAck(k.conn);
};

const data = group('http2', '6.1', 'http2/6_1_data.go', [
  connectionError('Sends a DATA frame with 0x0 stream identifier', ({ conn }) => conn.writeData(0, true, bytes('test')), ErrorCode.PROTOCOL_ERROR),
  streamError(
    'Sends a DATA frame on the stream that is not in "open" or "half-closed (local)" state',
    (k) => {
      k.sendCheck();
      k.conn.writeData(STREAM_ID, true, bytes('test'));
    },
    ErrorCode.STREAM_CLOSED,
  ),
  // h2spec's bytes: a DATA frame of 5 bytes whose pad length is 6, on a request of content-length 4.
  connectionError(
    'Sends a DATA frame with invalid pad length',
    (k) => {
      k.openCheck(STREAM_ID, { fields: [...k.headers(), field('content-length', '4')] });
      k.conn.send(bytes('\x00\x00\x05\x00\x09\x00\x00\x00\x01\x06\x54\x65\x73\x74'));
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
]);

const headers = group('http2', '6.2', 'http2/6_2_headers.go', [
  interruptedBlock('Sends a HEADERS frame without the END_HEADERS flag, and a PRIORITY frame', interruptions.priority),
  interruptedBlock('Sends a HEADERS frame to another stream while sending a HEADERS frame', interruptions.headers),
  // h2spec's frame as it is: no body can follow a HEADERS frame on stream 0.
  connectionError('Sends a HEADERS frame with 0x0 stream identifier', (k) => k.openCheck(0, { endStream: true }), ErrorCode.PROTOCOL_ERROR),
  streamError(
    'Sends a HEADERS frame with invalid pad length',
    (k) => {
      // h2spec's bytes: END_STREAM | END_HEADERS | PADDED, a pad length two bytes past the block.
      const block = k.conn.encodeHeaders(k.headers());
      const header = bytes('\x00\x00\x00\x01\x0d\x00\x00\x00\x01');
      header[2] = (block.length + 1) & 0xff;
      k.conn.send(Buffer.concat([header, Buffer.from([(block.length + 2) & 0xff]), block]));
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
]);

const priority = group('http2', '6.3', 'http2/6_3_priority.go', [
  connectionError('Sends a PRIORITY frame with 0x0 stream identifier', ({ conn }) => conn.writePriority(0, { streamDep: 0, exclusive: false, weight: 255 }), ErrorCode.PROTOCOL_ERROR),
  rawAfterCheck('Sends a PRIORITY frame with a length other than 5 octets', '\x00\x00\x04\x02\x00\x00\x00\x00\x01\x80\x00\x00\x01', ErrorCode.FRAME_SIZE_ERROR),
]);

const rstStream = group('http2', '6.4', 'http2/6_4_rst_stream.go', [
  connectionError('Sends a RST_STREAM frame with 0x0 stream identifier', ({ conn }) => conn.writeRstStream(0, ErrorCode.CANCEL), ErrorCode.PROTOCOL_ERROR),
  connectionError('Sends a RST_STREAM frame on a idle stream', ({ conn }) => conn.writeRstStream(STREAM_ID, ErrorCode.CANCEL), ErrorCode.PROTOCOL_ERROR),
  rawAfterCheck('Sends a RST_STREAM frame with a length other than 4 octets', '\x00\x00\x03\x03\x00\x00\x00\x00\x01\x00\x00\x00', ErrorCode.FRAME_SIZE_ERROR),
]);

const settings = group('http2', '6.5', 'http2/6_5_settings.go', [
  rawConnectionError('Sends a SETTINGS frame with ACK flag and payload', '\x00\x00\x01\x04\x01\x00\x00\x00\x00\x00', ErrorCode.FRAME_SIZE_ERROR),
  rawConnectionError('Sends a SETTINGS frame with a stream identifier other than 0x0', '\x00\x00\x06\x04\x00\x00\x00\x00\x01\x00\x03\x00\x00\x00\x64', ErrorCode.PROTOCOL_ERROR),
  // h2spec applies its stream error rule here, with either code.
  streamError(
    'Sends a SETTINGS frame with a length other than a multiple of 6 octets',
    ({ conn }) => conn.send(bytes('\x00\x00\x03\x04\x00\x00\x00\x00\x00\x00\x03\x00')),
    ErrorCode.PROTOCOL_ERROR,
    ErrorCode.FRAME_SIZE_ERROR,
  ),
]);

const settingError = (desc: string, id: number, value: number, code: number) => connectionError(desc, ({ conn }) => conn.writeSettings([id, value]), code);
const definedSettingsParameters = group('http2', '6.5.2', 'http2/6_5_2_defined_settings_parameters.go', [
  settingError('SETTINGS_ENABLE_PUSH (0x2): Sends the value other than 0 or 1', Setting.ENABLE_PUSH, 2, ErrorCode.PROTOCOL_ERROR),
  settingError(
    'SETTINGS_INITIAL_WINDOW_SIZE (0x4): Sends the value above the maximum flow control window size',
    Setting.INITIAL_WINDOW_SIZE,
    2 ** 31,
    ErrorCode.FLOW_CONTROL_ERROR,
  ),
  settingError('SETTINGS_MAX_FRAME_SIZE (0x5): Sends the value below the initial value', Setting.MAX_FRAME_SIZE, 16383, ErrorCode.PROTOCOL_ERROR),
  settingError('SETTINGS_MAX_FRAME_SIZE (0x5): Sends the value above the maximum allowed frame size', Setting.MAX_FRAME_SIZE, 16777216, ErrorCode.PROTOCOL_ERROR),
  pingAnswered('Sends a SETTINGS frame with unknown identifier', ({ conn }) => conn.writeSettings([0xff, 1]), ping()),
]);

const settingsSynchronization = group('http2', '6.5.3', 'http2/6_5_3_settings_synchronization.go', [
  withAnswerOfAtLeast(1, 'Sends multiple values of SETTINGS_INITIAL_WINDOW_SIZE', async (k) => {
    await setInitialWindowSize(k, 100, 1);
    k.sendCheck();
    return verifyDataFrameLength(k.conn, STREAM_ID, 1);
  }),
  {
    desc: 'Sends a SETTINGS frame without ACK flag',
    async run({ conn }) {
      await conn.handshake();
      conn.writeSettings([Setting.ENABLE_PUSH, 0]);
      return verifySettingsFrameWithAck(conn);
    },
  },
]);

const pingGroup = group('http2', '6.7', 'http2/6_7_ping.go', [
  pingAnswered('Sends a PING frame', () => undefined, ping('h2spec')),
  pingAnswered('Sends a PING frame with ACK', ({ conn }) => conn.writePing(true, ping('invalid')), ping('h2spec')),
  rawConnectionError('Sends a PING frame with a stream identifier field value other than 0x0', '\x00\x00\x08\x06\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00', ErrorCode.PROTOCOL_ERROR),
  rawConnectionError('Sends a PING frame with a length field value other than 8', '\x00\x00\x06\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00', ErrorCode.FRAME_SIZE_ERROR),
]);

const goAway = group('http2', '6.8', 'http2/6_8_goaway.go', [
  rawConnectionError('Sends a GOAWAY frame with a stream identifier other than 0x0', '\x00\x00\x08\x07\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00', ErrorCode.PROTOCOL_ERROR),
]);

const windowUpdate = group('http2', '6.9', 'http2/6_9_window_update.go', [
  connectionError('Sends a WINDOW_UPDATE frame with a flow control window increment of 0', ({ conn }) => conn.writeWindowUpdate(0, 0), ErrorCode.PROTOCOL_ERROR),
  streamError(
    'Sends a WINDOW_UPDATE frame with a flow control window increment of 0 on a stream',
    (k) => {
      k.openCheck();
      k.conn.writeWindowUpdate(STREAM_ID, 0);
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
  rawConnectionError('Sends a WINDOW_UPDATE frame with a length other than 4 octets', '\x00\x00\x03\x08\x00\x00\x00\x00\x00\x00\x00\x01', ErrorCode.FRAME_SIZE_ERROR),
]);

const theFlowControlWindow = group('http2', '6.9.1', 'http2/6_9_1_the_flow_control_window.go', [
  withAnswerOfAtLeast(1, 'Sends SETTINGS frame to set the initial window size to 1 and sends HEADERS frame', async (k) => {
    await setInitialWindowSize(k, 1);
    k.sendCheck();
    return verifyDataFrameLength(k.conn, STREAM_ID, 1);
  }),
  {
    desc: 'Sends multiple WINDOW_UPDATE frames increasing the flow control window to above 2^31-1',
    async run({ conn }) {
      await conn.handshake();
      conn.writeWindowUpdate(0, MAX_WINDOW);
      conn.writeWindowUpdate(0, MAX_WINDOW);
      return verifyGoAwayFrame(conn, ErrorCode.FLOW_CONTROL_ERROR);
    },
  },
  {
    desc: 'Sends multiple WINDOW_UPDATE frames increasing the flow control window to above 2^31-1 on a stream',
    async run(k) {
      await k.conn.handshake();
      k.openCheck();
      k.conn.writeWindowUpdate(STREAM_ID, MAX_WINDOW);
      k.conn.writeWindowUpdate(STREAM_ID, MAX_WINDOW);
      return verifyRstStreamFrame(k.conn, STREAM_ID, ErrorCode.FLOW_CONTROL_ERROR);
    },
  },
]);

const initialFlowControlWindowSize = group('http2', '6.9.2', 'http2/6_9_2_initial_flow_control_window_size.go', [
  withAnswerOfAtLeast(1, 'Changes SETTINGS_INITIAL_WINDOW_SIZE after sending HEADERS frame', async (k) => {
    await setInitialWindowSize(k, 0);
    k.sendCheck();
    k.conn.writeSettings([Setting.INITIAL_WINDOW_SIZE, 1]);
    return verifyDataFrameLength(k.conn, STREAM_ID, 1);
  }),
  withAnswerOfAtLeast(5, 'Sends a SETTINGS frame for window size to be negative', async (k) => {
    await setInitialWindowSize(k, 3);
    k.sendCheck();
    await verifyEventType(k.conn, FrameType.DATA);
    // 3 bytes sent, a window of 2: -1, then 1 after a WINDOW_UPDATE of 2.
    await setInitialWindowSize(k, 2);
    k.conn.writeWindowUpdate(STREAM_ID, 2);
    return verifyDataFrameLength(k.conn, STREAM_ID, 1);
  }),
  rawConnectionError(
    'Sends a SETTINGS_INITIAL_WINDOW_SIZE settings with an exceeded maximum window size value',
    '\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x80\x00\x00\x00',
    ErrorCode.FLOW_CONTROL_ERROR,
  ),
]);

const continuation = group('http2', '6.10', 'http2/6_10_continuation.go', [
  answered('Sends multiple CONTINUATION frames preceded by a HEADERS frame', (k) => {
    k.openCheck(STREAM_ID, { endHeaders: false });
    k.conn.writeContinuation(STREAM_ID, false, k.conn.encodeHeaders(dummyHeaders(1)));
    k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(dummyHeaders(1)));
    k.checkData();
  }),
  connectionError(
    'Sends a CONTINUATION frame followed by any frame other than CONTINUATION',
    (k) => {
      k.openCheck(STREAM_ID, { endHeaders: false });
      k.conn.writeContinuation(STREAM_ID, false, k.conn.encodeHeaders(dummyHeaders(1)));
      k.checkData();
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
  // h2spec's HEADERS ends the stream; the block, cut by a CONTINUATION on stream 0, is never whole.
  connectionError(
    'Sends a CONTINUATION frame with 0x0 stream identifier',
    (k) => {
      k.openCheck(STREAM_ID, { endStream: true, endHeaders: false });
      k.conn.writeContinuation(0, true, k.conn.encodeHeaders(dummyHeaders(1)));
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
  // The next two are about the frame right after a complete block: h2spec's frames as they are, no DATA between.
  connectionError(
    'Sends a CONTINUATION frame preceded by a HEADERS frame with END_HEADERS flag',
    (k) => {
      k.openCheck(STREAM_ID, { endStream: true });
      k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(dummyHeaders(1)));
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
  connectionError(
    'Sends a CONTINUATION frame preceded by a CONTINUATION frame with END_HEADERS flag',
    (k) => {
      k.openCheck(STREAM_ID, { endStream: true, endHeaders: false });
      k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(dummyHeaders(1)));
      k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(dummyHeaders(1)));
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
  connectionError(
    'Sends a CONTINUATION frame preceded by a DATA frame',
    (k) => {
      k.openCheck(STREAM_ID, { endHeaders: false });
      k.checkData();
      k.conn.writeContinuation(STREAM_ID, false, k.conn.encodeHeaders(dummyHeaders(1)));
      k.conn.writeContinuation(0, true, k.conn.encodeHeaders(dummyHeaders(1)));
    },
    ErrorCode.PROTOCOL_ERROR,
  ),
]);

const errorCodes = group('http2', '7', 'http2/7_error_codes.go', [
  pingAnsweredOrClosed('Sends a GOAWAY frame with unknown error code', ({ conn }) => conn.writeGoAway(0, 0xff, Buffer.alloc(0)), ping('h2spec')),
  pingAnsweredOrClosed(
    'Sends a RST_STREAM frame with unknown error code',
    (k) => {
      k.openCheck();
      k.conn.writeRstStream(STREAM_ID, 0xff);
    },
    ping(),
  ),
]);

export const HTTP2_FRAME_CASES: H2specCase[] = [
  ...data,
  ...headers,
  ...priority,
  ...rstStream,
  ...settings,
  ...definedSettingsParameters,
  ...settingsSynchronization,
  ...pingGroup,
  ...goAway,
  ...windowUpdate,
  ...theFlowControlWindow,
  ...initialFlowControlWindowSize,
  ...continuation,
  ...errorCodes,
];
