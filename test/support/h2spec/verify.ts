import { describe, errorCodeName, errorCodeOf, Flag, frameOf, FrameType, type H2Event } from './frames.js';
import type { RawH2Client } from './raw-client.js';

/**
 * h2spec's pass rules (spec/verifier.go), ported with their quirks, because they are the
 * rules: every one reads events until it passes or a read yields no frame (the connection
 * closed, a timeout, an error); "connection closed" passes every error rule, even after a
 * GOAWAY or RST_STREAM whose code was not the expected one. Such a pass is recorded in
 * `lenientPasses` so that the suite can say which ones passed only that way.
 */

/** spec.TestError: what h2spec expected, what it got, and here every event read on the way. */
export class H2specFailure extends Error {
  constructor(expected: string[], actual: H2Event | undefined, transcript: readonly H2Event[]) {
    const seen = transcript.map(describe).join('; ') || 'nothing';
    super(`expected ${expected.join(' or ')}; actual: ${describe(actual)}\n      events read: ${seen}`);
    this.name = 'H2specFailure';
  }
}

const CONNECTION_CLOSED = 'Connection closed';
const STREAM_CLOSED = 'Stream closed';
const goAwayWith = (code: number) => `GOAWAY Frame (Error Code: ${errorCodeName(code)})`;
const rstStreamWith = (code: number) => `RST_STREAM Frame (Error Code: ${errorCodeName(code)})`;

/** Passes by a connection close after an error frame with another code, for the suite to report. */
export const lenientPasses: string[] = [];

function noteLenientPass(client: RawH2Client, codes: readonly number[]): void {
  const others = client.transcript
    .map((event) => frameOf(event, FrameType.GOAWAY) ?? frameOf(event, FrameType.RST_STREAM))
    .filter((frame) => frame !== undefined && !codes.includes(errorCodeOf(frame)));
  if (others.length > 0) lenientPasses.push(`closed after ${others.map((frame) => describe({ kind: 'frame', frame: frame! })).join(', ')}; expected ${codes.map(errorCodeName).join(' or ')}`);
}

/**
 * The loop of every rule but the typed waits: `judge` says whether an event passes (true),
 * becomes the "actual" a failure reports (false), or neither ('silent': a frame of the kind
 * the rule waits for but not the one it wants, which h2spec reads past without noting). A timeout is the actual only when
 * nothing else was.
 */
async function readUntil(client: RawH2Client, judge: (event: H2Event) => boolean | 'silent'): Promise<{ passed: boolean; actual: H2Event | undefined }> {
  let actual: H2Event | undefined;
  while (!client.closed) {
    const event = await client.waitEvent();
    const verdict = judge(event);
    if (verdict === true) return { passed: true, actual };
    if (event.kind === 'timeout') actual ??= event;
    else if (verdict === false) actual = event;
  }
  return { passed: false, actual };
}

/** VerifyConnectionClose. */
export async function verifyConnectionClose(client: RawH2Client): Promise<void> {
  const { passed, actual } = await readUntil(client, (event) => event.kind === 'closed');
  if (!passed) throw new H2specFailure([CONNECTION_CLOSED], actual, client.transcript);
}

/** VerifyConnectionError: GOAWAY with one of `codes`, or the connection closed. */
export async function verifyConnectionError(client: RawH2Client, ...codes: number[]): Promise<void> {
  const { passed, actual } = await readUntil(client, (event) => {
    if (event.kind === 'closed') return true;
    const goAway = frameOf(event, FrameType.GOAWAY);
    // A GOAWAY with another code is not the "actual" in h2spec: it keeps reading.
    if (goAway) return codes.includes(errorCodeOf(goAway)) || 'silent';
    return false;
  });
  if (!passed) throw new H2specFailure([...codes.map(goAwayWith), CONNECTION_CLOSED], actual, client.transcript);
  noteLenientPass(client, codes);
}

/** VerifyStreamError: RST_STREAM or GOAWAY with one of `codes`, or the connection closed. */
export async function verifyStreamError(client: RawH2Client, ...codes: number[]): Promise<void> {
  const { passed, actual } = await readUntil(client, (event) => {
    if (event.kind === 'closed') return true;
    const errorFrame = frameOf(event, FrameType.GOAWAY) ?? frameOf(event, FrameType.RST_STREAM);
    if (errorFrame) return codes.includes(errorCodeOf(errorFrame)) || 'silent';
    return false;
  });
  if (!passed) throw new H2specFailure([...codes.flatMap((code) => [goAwayWith(code), rstStreamWith(code)]), CONNECTION_CLOSED], actual, client.transcript);
  noteLenientPass(client, codes);
}

/** VerifyStreamClose: DATA or HEADERS with END_STREAM, or RST_STREAM(NO_ERROR), on any stream. */
export async function verifyStreamClose(client: RawH2Client): Promise<void> {
  const { passed, actual } = await readUntil(client, (event) => {
    const ending = frameOf(event, FrameType.DATA) ?? frameOf(event, FrameType.HEADERS);
    if (ending) return (ending.flags & Flag.END_STREAM) !== 0 || 'silent';
    const reset = frameOf(event, FrameType.RST_STREAM);
    if (reset) return errorCodeOf(reset) === 0 || 'silent';
    return false;
  });
  if (!passed) throw new H2specFailure([STREAM_CLOSED], actual, client.transcript);
}

/** VerifyHeadersFrame: the first HEADERS frame read is on `streamId`. */
export async function verifyHeadersFrame(client: RawH2Client, streamId: number): Promise<void> {
  const { event } = await client.waitEventByType(FrameType.HEADERS);
  if (frameOf(event, FrameType.HEADERS)?.streamId !== streamId) throw new H2specFailure([`HEADERS Frame (stream_id:${streamId})`], event, client.transcript);
}

/** VerifySettingsFrameWithAck: the first SETTINGS frame read is an ACK. */
export async function verifySettingsFrameWithAck(client: RawH2Client): Promise<void> {
  const { event } = await client.waitEventByType(FrameType.SETTINGS);
  const settings = frameOf(event, FrameType.SETTINGS);
  if (!settings || !(settings.flags & Flag.ACK)) throw new H2specFailure(['SETTINGS Frame (length:0, flags:0x01, stream_id:0)'], event, client.transcript);
}

const isPingAck = (event: H2Event, data: Buffer) => {
  const ping = frameOf(event, FrameType.PING);
  return ping !== undefined && (ping.flags & Flag.ACK) !== 0 && ping.payload.equals(data);
};
const expectedPing = (data: Buffer) => `PING Frame (length:8, flags:0x01, stream_id:0, opaque_data:${JSON.stringify(data.toString('latin1'))})`;

/** VerifyPingFrameWithAck: the first PING frame read is an ACK carrying `data`. */
export async function verifyPingFrameWithAck(client: RawH2Client, data: Buffer): Promise<void> {
  const { event } = await client.waitEventByType(FrameType.PING);
  if (!event || !isPingAck(event, data)) throw new H2specFailure([expectedPing(data)], event, client.transcript);
}

/** VerifyPingFrameOrConnectionClose: a PING ACK carrying `data`, or the connection closed. */
export async function verifyPingFrameOrConnectionClose(client: RawH2Client, data: Buffer): Promise<void> {
  const { passed, actual } = await readUntil(client, (event) => {
    if (event.kind === 'closed') return true;
    return frameOf(event, FrameType.PING) ? isPingAck(event, data) || 'silent' : false;
  });
  if (!passed) throw new H2specFailure([CONNECTION_CLOSED, expectedPing(data)], actual, client.transcript);
}

/** VerifyEventType: a frame of `type` before the connection closes or goes quiet. */
export async function verifyEventType(client: RawH2Client, type: number): Promise<void> {
  const { event, found } = await client.waitEventByType(type);
  if (!found) throw new H2specFailure([`a frame of type ${type}`], event, client.transcript);
}

/*
 * The typed waits some cases write inline, each as its case reads.
 */

/** http2/6.5.3/1, 6.9.1/1, 6.9.2/1-2: the first DATA frame is `length` bytes long (its stream is not checked). */
export async function verifyDataFrameLength(client: RawH2Client, streamId: number, length: number): Promise<void> {
  const { event } = await client.waitEventByType(FrameType.DATA);
  if (frameOf(event, FrameType.DATA)?.length !== length) throw new H2specFailure([`DATA Frame (length:${length}, flags:0x00, stream_id:${streamId})`], event, client.transcript);
}

/** http2/6.9.1/2: the first GOAWAY frame carries `code`. */
export async function verifyGoAwayFrame(client: RawH2Client, code: number): Promise<void> {
  const { event } = await client.waitEventByType(FrameType.GOAWAY);
  const goAway = frameOf(event, FrameType.GOAWAY);
  if (!goAway || errorCodeOf(goAway) !== code) throw new H2specFailure([goAwayWith(code)], event, client.transcript);
}

/** http2/6.9.1/3: the first RST_STREAM frame carries `code`, if it is on `streamId` (one on another stream passes). */
export async function verifyRstStreamFrame(client: RawH2Client, streamId: number, code: number): Promise<void> {
  const { event } = await client.waitEventByType(FrameType.RST_STREAM);
  const reset = frameOf(event, FrameType.RST_STREAM);
  if (!reset || (reset.streamId === streamId && errorCodeOf(reset) !== code)) throw new H2specFailure([rstStreamWith(code)], event, client.transcript);
}

/** http2/5.4.1/2 (strict): a GOAWAY frame, whatever its code. */
export async function verifyGoAwayReceived(client: RawH2Client, code: number): Promise<void> {
  const { event, found } = await client.waitEventByType(FrameType.GOAWAY);
  if (!found) throw new H2specFailure([goAwayWith(code)], event, client.transcript);
}
