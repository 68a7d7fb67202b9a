import { group, STREAM_ID, type CaseKit, type H2specCase } from './case.js';
import { ErrorCode } from './frames.js';
import { field, type HeaderField } from './hpack-encoder.js';
import { connectionError, streamError } from './shapes.js';

/** h2spec's `http2` section, RFC 7540 §8 (http2/8_*.go), in h2spec's order. */

const isPseudo = (f: HeaderField) => f.name.startsWith(':');

/**
 * h2spec appends to CommonHeaders, which holds pseudo-header fields only: a pseudo-header
 * it adds comes right after the others, so here it goes before content-type and te, lest
 * the request also break the "pseudo-header fields first" rule the case is not about.
 */
const withPseudo = (fields: HeaderField[], extra: HeaderField) => [...fields.filter(isPseudo), extra, ...fields.filter((f) => !isPseudo(f))];
const without = (fields: HeaderField[], ...names: string[]) => fields.filter((f) => !names.includes(f.name));
const replaced = (fields: HeaderField[], name: string, value: string) => fields.map((f) => (f.name === name ? field(name, value) : f));

/** A Check whose header list is `fields(k.headers())`: a stream error of type PROTOCOL_ERROR. */
const malformed = (desc: string, fields: (headers: HeaderField[]) => HeaderField[]) =>
  streamError(desc, (k) => k.sendCheck(STREAM_ID, { fields: fields(k.headers()) }), ErrorCode.PROTOCOL_ERROR);

/** A Check's HEADERS and body (END_STREAM off), then a second HEADERS frame of `trailers`, END_STREAM off too. */
const withTrailers = (desc: string, trailers: HeaderField[]) =>
  streamError(
    desc,
    (k: CaseKit) => {
      k.openCheck();
      k.conn.writeData(STREAM_ID, false, k.body());
      k.conn.writeHeaders({ streamId: STREAM_ID, endHeaders: true, blockFragment: k.conn.encodeHeaders(trailers) });
    },
    ErrorCode.PROTOCOL_ERROR,
  );

/** A Check declaring content-length 1 whose body (never 1 byte) comes in `frames` DATA frames. */
const wrongContentLength = (desc: string, frames: 1 | 2) =>
  streamError(
    desc,
    (k) => {
      k.openCheck(STREAM_ID, { fields: [...k.headers(), field('content-length', '1')] });
      const body = k.body();
      if (frames === 2) k.conn.writeData(STREAM_ID, false, body.subarray(0, 4));
      k.conn.writeData(STREAM_ID, true, frames === 2 ? body.subarray(4) : body);
    },
    ErrorCode.PROTOCOL_ERROR,
  );

const requestResponseExchange = group('http2', '8.1', 'http2/8_1_http_request_response_exchange.go', [
  withTrailers('Sends a second HEADERS frame without the END_STREAM flag', [field('x-test', 'ok')]),
]);

const headerFields = group('http2', '8.1.2', 'http2/8_1_2_http_header_fields.go', [
  malformed('Sends a HEADERS frame that contains the header field name in uppercase letters', (h) => [...h, field('X-TEST', 'ok')]),
]);

const pseudoHeaderFields = group('http2', '8.1.2.1', 'http2/8_1_2_1_pseudo_header_fields.go', [
  malformed('Sends a HEADERS frame that contains a unknown pseudo-header field', (h) => withPseudo(h, field(':test', 'ok'))),
  malformed('Sends a HEADERS frame that contains the pseudo-header field defined for response', (h) => withPseudo(h, field(':status', '200'))),
  // h2spec's trailers do not end the stream either.
  withTrailers('Sends a HEADERS frame that contains a pseudo-header field as trailers', [field(':method', 'POST')]),
  malformed('Sends a HEADERS frame that contains a pseudo-header field that appears in a header block after a regular header field', (h) => [field('x-test', 'ok'), ...h]),
]);

const connectionSpecificHeaderFields = group('http2', '8.1.2.2', 'http2/8_1_2_2_connection_specific_header_fields.go', [
  malformed('Sends a HEADERS frame that contains the connection-specific header field', (h) => [...h, field('connection', 'keep-alive')]),
  // gRPC's te: trailers gives way to h2spec's "trailers: test" and "te: trailers, deflate".
  malformed('Sends a HEADERS frame that contains the TE header field with any value other than "trailers"', (h) => [
    ...without(h, 'te'),
    field('trailers', 'test'),
    field('te', 'trailers, deflate'),
  ]),
]);

const requestPseudoHeaderFields = group('http2', '8.1.2.3', 'http2/8_1_2_3_request_pseudo_header_fields.go', [
  malformed('Sends a HEADERS frame with empty ":path" pseudo-header field', (h) => replaced(h, ':path', '')),
  // h2spec encodes headers[1:] of a list that already left out :method: :scheme goes too.
  malformed('Sends a HEADERS frame that omits ":method" pseudo-header field', (h) => without(h, ':method', ':scheme')),
  malformed('Sends a HEADERS frame that omits ":scheme" pseudo-header field', (h) => without(h, ':scheme')),
  malformed('Sends a HEADERS frame that omits ":path" pseudo-header field', (h) => without(h, ':path')),
  malformed('Sends a HEADERS frame with duplicated ":method" pseudo-header field', (h) => withPseudo(h, field(':method', 'POST'))),
  malformed('Sends a HEADERS frame with duplicated ":scheme" pseudo-header field', (h) => withPseudo(h, field(':scheme', 'http'))),
  malformed('Sends a HEADERS frame with duplicated ":path" pseudo-header field', (h) => withPseudo(h, h.find((f) => f.name === ':path')!)),
]);

const malformedRequests = group('http2', '8.1.2.6', 'http2/8_1_2_6_malformed_requests_and_responses.go', [
  wrongContentLength('Sends a HEADERS frame with the "content-length" header field which does not equal the DATA frame payload length', 1),
  wrongContentLength('Sends a HEADERS frame with the "content-length" header field which does not equal the sum of the multiple DATA frames payload length', 2),
]);

const serverPush = group('http2', '8.2', 'http2/8_2_server_push.go', [
  connectionError('Sends a PUSH_PROMISE frame', (k) => k.conn.writePushPromise(STREAM_ID, 3, true, k.conn.encodeHeaders(k.headers())), ErrorCode.PROTOCOL_ERROR),
]);

export const HTTP2_MESSAGE_CASES: H2specCase[] = [
  ...requestResponseExchange,
  ...headerFields,
  ...pseudoHeaderFields,
  ...connectionSpecificHeaderFields,
  ...requestPseudoHeaderFields,
  ...malformedRequests,
  ...serverPush,
];
