import { dummyHeaders, STREAM_ID, WEIGHT_256, type CaseBody, type CaseKit } from './case.js';
import { CLIENT_PREFACE, DEFAULT_WINDOW_SIZE, ErrorCode, Flag, frameOf, FrameType, Setting } from './frames.js';
import { H2specFailure, verifyConnectionError, verifyHeadersFrame, verifyPingFrameOrConnectionClose, verifyPingFrameWithAck, verifyStreamError } from './verify.js';

/**
 * The shapes most h2spec cases share: handshake, send some frames, apply one pass rule.
 * A case that does anything else is written out in full.
 */

type Send = (k: CaseKit) => void;

const shape =
  (verify: (k: CaseKit) => Promise<void>) =>
  (desc: string, send: Send): CaseBody => ({
    desc,
    async run(k) {
      await k.conn.handshake();
      send(k);
      return verify(k);
    },
  });

/** VerifyHeadersFrame on stream 1: the request is answered. */
export const answered = shape((k) => verifyHeadersFrame(k.conn, STREAM_ID));

/** VerifyConnectionError with `codes`. */
export const connectionError = (desc: string, send: Send, ...codes: number[]) => shape((k) => verifyConnectionError(k.conn, ...codes))(desc, send);

/** VerifyStreamError with `codes`. */
export const streamError = (desc: string, send: Send, ...codes: number[]) => shape((k) => verifyStreamError(k.conn, ...codes))(desc, send);

/** `send`, then a PING: VerifyPingFrameWithAck. */
export const pingAnswered = (desc: string, send: Send, data: Buffer) =>
  shape((k) => verifyPingFrameWithAck(k.conn, data))(desc, (k) => {
    send(k);
    k.conn.writePing(false, data);
  });

/** `send`, then a PING: VerifyPingFrameOrConnectionClose. */
export const pingAnsweredOrClosed = (desc: string, send: Send, data: Buffer) =>
  shape((k) => verifyPingFrameOrConnectionClose(k.conn, data))(desc, (k) => {
    send(k);
    k.conn.writePing(false, data);
  });

/** generic/1 and http2/3.5/1: the server's first frame is a SETTINGS frame without ACK. */
export async function sendClientPreface({ conn }: CaseKit): Promise<void> {
  conn.send(CLIENT_PREFACE);
  conn.writeSettings([Setting.INITIAL_WINDOW_SIZE, DEFAULT_WINDOW_SIZE]);
  const event = await conn.waitEvent();
  const settings = frameOf(event, FrameType.SETTINGS);
  if (!settings || settings.flags & Flag.ACK) throw new H2specFailure(['SETTINGS Frame (flags:0x00)'], event, conn.transcript);
}

/** A header block interrupted by another frame: h2spec's frames as they are, no DATA (the connection error comes first). */
export const interruptedBlock = (desc: string, interruption: (k: CaseKit) => void) =>
  connectionError(
    desc,
    (k) => {
      k.openCheck(STREAM_ID, { endHeaders: false });
      interruption(k);
      k.conn.writeContinuation(STREAM_ID, true, k.conn.encodeHeaders(dummyHeaders(1)));
    },
    ErrorCode.PROTOCOL_ERROR,
  );

export const interruptions = {
  priority: ({ conn }: CaseKit) => conn.writePriority(STREAM_ID, WEIGHT_256),
  // h2spec's second HEADERS ends its stream (END_STREAM): it is the violation, sent as it is.
  headers: (k: CaseKit) => k.openCheck(STREAM_ID + 2, { endStream: true }),
};
