import protobuf from 'protobufjs';
import { ACME_CHALLENGE_PATH } from '../contract/edge-keys.js';
import { factsOf, fieldsOf, type CheckRequest, type CheckRequestFields, type RequestFacts } from './check-request.js';

/**
 * A CheckRequest decoder that walks the wire format to the strings a decision reads
 * (authz/check-request.ts, CheckRequestFields) and skips everything else by wire type,
 * without building the other headers, addresses and attributes proto-loader would.
 *
 * It answers null ("unsure", decode it fully) where its reading could differ from
 * proto-loader's (protobufjs's generated decoder, node_modules/protobufjs/src/decoder.js):
 * - a field on its path with an unexpected wire type (protobufjs reads it as the declared
 *   type regardless, garbage included);
 * - a second occurrence of a singular embedded message on its path: proto3 merges the two,
 *   protobufjs's decoder replaces the first with the second (`m.x=types[i].decode(...)`);
 *   Envoy's serializer never splits a message, so this costs nothing in practice;
 * - `pipe` or `envoy_internal_address` beside `socket_address` in the source Address (a
 *   oneof: proto3 keeps the last one set, protobufjs keeps both);
 * - a length running past its enclosing message, a bad varint, or a wire type that cannot
 *   be skipped (4, 6, 7): proto-loader then fails the call as before.
 * Repeated scalars and map entries with the same key: the last one wins, as in protobufjs
 * (`m[k]=value` per entry) and proto3.
 *
 * Parts it skips are not validated: a malformed destination address, say, fails
 * proto-loader's decode but not this one. Such a request carries no facts of its own.
 */

/** A wire tag: field number and wire type (2: length-delimited, the only one on the path). */
const tag = (field: number) => (field << 3) | 2;

// envoy/service/auth/v3/external_auth.proto, CheckRequest
const CHECK_ATTRIBUTES = tag(1);
// envoy/service/auth/v3/attribute_context.proto, AttributeContext and its Peer, Request, HttpRequest
const ATTRIBUTES_SOURCE = tag(1);
const ATTRIBUTES_REQUEST = tag(4);
const PEER_ADDRESS = tag(1);
const REQUEST_HTTP = tag(2);
const HTTP_HEADERS = tag(3);
const HTTP_PATH = tag(4);
const HTTP_HOST = tag(5);
// envoy/config/core/v3/address.proto, Address (oneof address) and SocketAddress
const ADDRESS_SOCKET_ADDRESS = tag(1);
const ADDRESS_OTHER_MEMBERS: ReadonlySet<number> = new Set([2, 3]);
const SOCKET_ADDRESS_ADDRESS = tag(2);
// A map<string, string> entry (protobuf encoding spec: `message Entry { K key = 1; V value = 2; }`)
const ENTRY_KEY = tag(1);
const ENTRY_VALUE = tag(2);

const AUTHORIZATION = Buffer.from('authorization');
const EXTERNAL_ADDRESS = Buffer.from('x-envoy-external-address');
const TRACEPARENT = Buffer.from('traceparent');
const REQUEST_ID = Buffer.from('x-request-id');
const CHALLENGE_PATH = Buffer.from(ACME_CHALLENGE_PATH);

/** Thrown inside the walk for "unsure"; never leaves this module. */
const UNSURE = new Error('unsure');

type Reader = protobuf.Reader & { buf: Buffer };

/** The decision's fields, or null when only a full decode can say what proto-loader would. */
export function decodeCheckRequestFields(bytes: Buffer): CheckRequestFields | null {
  const reader = protobuf.Reader.create(bytes) as Reader;
  const fields: CheckRequestFields = { host: '', peer: '', authorization: undefined, externalAddress: undefined, traceparent: undefined, requestId: undefined };
  try {
    walkCheckRequest(reader, bytes.length, fields);
    return fields;
  } catch {
    return null;
  }
}

/**
 * The `requestDeserialize` of Check's method definition (authz/server.ts): the request facts, from the fast walk or, when
 * it is unsure, from proto-loader's full decode (`fullDeserialize`), which may throw as before.
 */
export function checkRequestDeserializer(fullDeserialize: (bytes: Buffer) => unknown, trustExternalAddress: boolean): (bytes: Buffer) => RequestFacts {
  return (bytes) => {
    const fields = decodeCheckRequestFields(bytes) ?? fieldsOf(fullDeserialize(bytes) as CheckRequest);
    return factsOf(fields, trustExternalAddress);
  };
}

// Each walk reads one message up to `end`. `depth` is its nesting, for protobufjs's
// recursion limit when skipping groups (`r.skipType(t&7,n)` in its decoder).

function walkCheckRequest(r: Reader, end: number, out: CheckRequestFields): void {
  let seen = false;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === CHECK_ATTRIBUTES) {
      seen = once(seen);
      walkAttributes(r, lengthEnd(r, end), out);
    } else skipOther(r, t, t >>> 3 === 1, 0, end);
  }
  atEnd(r, end);
}

function walkAttributes(r: Reader, end: number, out: CheckRequestFields): void {
  let source = false;
  let request = false;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === ATTRIBUTES_SOURCE) {
      source = once(source);
      walkPeer(r, lengthEnd(r, end), out);
    } else if (t === ATTRIBUTES_REQUEST) {
      request = once(request);
      walkRequest(r, lengthEnd(r, end), out);
    } else skipOther(r, t, t >>> 3 === 1 || t >>> 3 === 4, 1, end);
  }
  atEnd(r, end);
}

function walkPeer(r: Reader, end: number, out: CheckRequestFields): void {
  let seen = false;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === PEER_ADDRESS) {
      seen = once(seen);
      walkAddress(r, lengthEnd(r, end), out);
    } else skipOther(r, t, t >>> 3 === 1, 2, end);
  }
  atEnd(r, end);
}

function walkAddress(r: Reader, end: number, out: CheckRequestFields): void {
  let seen = false;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === ADDRESS_SOCKET_ADDRESS) {
      seen = once(seen);
      walkSocketAddress(r, lengthEnd(r, end), out);
    } else skipOther(r, t, t >>> 3 === 1 || ADDRESS_OTHER_MEMBERS.has(t >>> 3), 3, end);
  }
  atEnd(r, end);
}

function walkSocketAddress(r: Reader, end: number, out: CheckRequestFields): void {
  while (r.pos < end) {
    const t = r.uint32();
    if (t === SOCKET_ADDRESS_ADDRESS) out.peer = readString(r, end);
    else skipOther(r, t, t >>> 3 === 2, 4, end);
  }
  atEnd(r, end);
}

function walkRequest(r: Reader, end: number, out: CheckRequestFields): void {
  let seen = false;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === REQUEST_HTTP) {
      seen = once(seen);
      walkHttp(r, lengthEnd(r, end), out);
    } else skipOther(r, t, t >>> 3 === 2, 2, end);
  }
  atEnd(r, end);
}

function walkHttp(r: Reader, end: number, out: CheckRequestFields): void {
  while (r.pos < end) {
    const t = r.uint32();
    if (t === HTTP_HOST) out.host = readString(r, end);
    else if (t === HTTP_HEADERS) walkHeaderEntry(r, lengthEnd(r, end), out);
    else if (t === HTTP_PATH) readChallengePath(r, end, out);
    else skipOther(r, t, t >>> 3 === 3 || t >>> 3 === 4 || t >>> 3 === 5, 3, end);
  }
  atEnd(r, end);
}

/** One map entry; only the four headers a Check reads are turned into strings. */
function walkHeaderEntry(r: Reader, end: number, out: CheckRequestFields): void {
  let keyStart = 0;
  let keyEnd = 0;
  let valueStart = 0;
  let valueEnd = 0;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === ENTRY_KEY) {
      keyEnd = lengthEnd(r, end);
      keyStart = r.pos;
      r.pos = keyEnd;
    } else if (t === ENTRY_VALUE) {
      valueEnd = lengthEnd(r, end);
      valueStart = r.pos;
      r.pos = valueEnd;
    } else skipOther(r, t, t >>> 3 === 1 || t >>> 3 === 2, 3, end);
  }
  atEnd(r, end);
  // An entry without a value maps its key to '' (protobufjs starts each entry at the defaults).
  if (bytesAre(r.buf, keyStart, keyEnd, AUTHORIZATION)) out.authorization = r.buf.toString('utf8', valueStart, valueEnd);
  else if (bytesAre(r.buf, keyStart, keyEnd, EXTERNAL_ADDRESS)) out.externalAddress = r.buf.toString('utf8', valueStart, valueEnd);
  else if (bytesAre(r.buf, keyStart, keyEnd, TRACEPARENT)) out.traceparent = r.buf.toString('utf8', valueStart, valueEnd);
  else if (bytesAre(r.buf, keyStart, keyEnd, REQUEST_ID)) out.requestId = r.buf.toString('utf8', valueStart, valueEnd);
}

/** The path, kept only when it is an ACME challenge's (as fieldsOf does); a later path replaces an earlier one. */
function readChallengePath(r: Reader, end: number, out: CheckRequestFields): void {
  const stop = lengthEnd(r, end);
  if (stop - r.pos >= CHALLENGE_PATH.length && bytesAre(r.buf, r.pos, r.pos + CHALLENGE_PATH.length, CHALLENGE_PATH)) {
    out.challengePath = r.buf.toString('utf8', r.pos, stop);
  } else delete out.challengePath;
  r.pos = stop;
}

/**
 * Skips a field off the path. `onPath`: the field number is one the walk reads, but the tag
 * (its wire type) was not the expected one; proto-loader would misread it, so the walk is unsure.
 */
function skipOther(r: Reader, t: number, onPath: boolean, depth: number, end: number): void {
  const wireType = t & 7;
  if (onPath || wireType === 4 || wireType > 5) throw UNSURE;
  r.skipType(wireType, depth);
  if (r.pos > end) throw UNSURE;
}

/** A message must end exactly where its length said (a tag read past it overran). */
function atEnd(r: Reader, end: number): void {
  if (r.pos !== end) throw UNSURE;
}

/** A length prefix, checked against the enclosing message; returns where the value ends. */
function lengthEnd(r: Reader, end: number): number {
  const length = r.uint32(); // before r.pos: reading the length moves it
  const stop = r.pos + length;
  if (stop > end) throw UNSURE;
  return stop;
}

function readString(r: Reader, end: number): string {
  const stop = lengthEnd(r, end);
  // Buffer's utf8 decoding, as protobufjs's BufferReader.string (utf8Slice) does.
  const value = r.buf.toString('utf8', r.pos, stop);
  r.pos = stop;
  return value;
}

/** A singular embedded message seen a second time: proto3 would merge, protobufjs replaces. */
function once(seen: boolean): true {
  if (seen) throw UNSURE;
  return true;
}

function bytesAre(buf: Buffer, start: number, stop: number, expected: Buffer): boolean {
  if (stop - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i += 1) if (buf[start + i] !== expected[i]) return false;
  return true;
}
