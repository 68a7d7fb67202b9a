import fc from 'fast-check';
import protobuf from 'protobufjs';

/**
 * CheckRequests built at the wire level, so that a generated message can hold what no
 * well-behaved encoder writes: unknown fields of every wire type, fields out of order,
 * the same embedded message split in two occurrences, repeated scalars, invalid UTF-8.
 * Field numbers are those of Envoy's protos (envoy/service/auth/v3/*.proto,
 * envoy/config/core/v3/address.proto).
 */
export type WireField =
  | { field: number; kind: 'string'; value: string | Uint8Array }
  | { field: number; kind: 'varint'; value: number }
  | { field: number; kind: 'fixed32'; value: number }
  | { field: number; kind: 'fixed64'; value: number }
  | { field: number; kind: 'group'; inner: WireField[] }
  /** `split`: written as two occurrences of the field, each with half the body (proto3 merges them). */
  | { field: number; kind: 'message'; body: WireField[]; split: boolean };

export function encodeWire(fields: readonly WireField[]): Buffer {
  const writer = protobuf.Writer.create();
  writeFields(writer, fields);
  return Buffer.from(writer.finish());
}

function writeFields(w: protobuf.Writer, fields: readonly WireField[]): void {
  for (const f of fields) {
    switch (f.kind) {
      case 'string':
        w.uint32((f.field << 3) | 2);
        if (typeof f.value === 'string') w.string(f.value);
        else w.bytes(f.value);
        break;
      case 'varint':
        w.uint32(f.field << 3).uint32(f.value);
        break;
      case 'fixed32':
        w.uint32((f.field << 3) | 5).fixed32(f.value);
        break;
      case 'fixed64':
        w.uint32((f.field << 3) | 1).fixed64(f.value);
        break;
      case 'group':
        w.uint32((f.field << 3) | 3);
        writeFields(w, f.inner);
        w.uint32((f.field << 3) | 4);
        break;
      case 'message': {
        const halves = f.split ? [f.body.slice(0, f.body.length >> 1), f.body.slice(f.body.length >> 1)] : [f.body];
        for (const half of halves) {
          w.uint32((f.field << 3) | 2).fork();
          writeFields(w, half);
          w.ldelim();
        }
      }
    }
  }
}

/** Field numbers no message on the path declares (Envoy's messages stop well below 900). */
const unknownNumber = fc.integer({ min: 900, max: 5_000 });
const scalarUnknown: fc.Arbitrary<WireField> = fc.oneof(
  fc.record({ field: unknownNumber, kind: fc.constant('varint' as const), value: fc.nat() }),
  fc.record({ field: unknownNumber, kind: fc.constant('fixed32' as const), value: fc.nat() }),
  fc.record({ field: unknownNumber, kind: fc.constant('fixed64' as const), value: fc.nat() }),
  fc.record({ field: unknownNumber, kind: fc.constant('string' as const), value: fc.uint8Array({ maxLength: 12 }) }),
);
const unknownField: fc.Arbitrary<WireField> = fc.oneof(
  { weight: 4, arbitrary: scalarUnknown },
  { weight: 1, arbitrary: fc.record({ field: unknownNumber, kind: fc.constant('group' as const), inner: fc.array(scalarUnknown, { maxLength: 3 }) }) },
);

/** The known fields, a few unknown ones, in any order. */
function message(field: number, known: fc.Arbitrary<WireField[]>): fc.Arbitrary<WireField> {
  return fc
    .record({ known, unknown: fc.array(unknownField, { maxLength: 2 }), split: fc.integer({ min: 0, max: 24 }).map((n) => n === 0) })
    .chain(({ known: k, unknown, split }) =>
      fc.shuffledSubarray([...k, ...unknown], { minLength: k.length + unknown.length }).map((body): WireField => ({ field, kind: 'message', body, split })),
    );
}

const text = (field: number, value: fc.Arbitrary<string | Uint8Array>): fc.Arbitrary<WireField> => value.map((v) => ({ field, kind: 'string', value: v }));
const optional = <T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T[]> => fc.option(arbitrary, { nil: undefined }).map((v) => (v === undefined ? [] : [v]));
const flat = (...parts: fc.Arbitrary<WireField[]>[]): fc.Arbitrary<WireField[]> => fc.tuple(...parts).map((lists) => lists.flat());

const anyText: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  // Raw bytes, invalid UTF-8 included: both decoders must turn them into the same string.
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 12 }) },
);
const headerName = fc.oneof(
  // Envoy lowercases header names; the mixed-case ones must not count as the real header.
  { weight: 3, arbitrary: fc.constantFrom('authorization', 'x-envoy-external-address', 'traceparent', 'x-request-id', 'Authorization', 'X-Envoy-External-Address', 'AUTHORIZATION', 'Traceparent') },
  { weight: 2, arbitrary: fc.constantFrom('user-agent', 'accept', 'x-request-id', 'x-forwarded-proto', 'authorizatio', 'authorization ', '') },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
);
const headerValue = fc.oneof(
  fc.constantFrom('Bearer agk_abc123', 'bearer   agk_XyZ  ', 'Bearer agk_a,Bearer agk_b', 'Basic Zm9vOmJhcg==', ' 203.0.113.9 ', '198.51.100.4', ''),
  fc.ipV4(),
  anyText,
);
/** A map<string,string> entry; keys and values may be missing or written twice. */
const headerEntry = message(3, flat(optional(text(1, headerName)), optional(text(2, headerValue)), optional(text(1, headerName))));

const socketAddress = message(1, flat(optional(text(2, fc.oneof(fc.ipV4(), fc.ipV6(), anyText))), optional(fc.record({ field: fc.constant(3), kind: fc.constant('varint' as const), value: fc.integer({ min: 0, max: 65535 }) }))));
const address = message(1, flat(optional(socketAddress)));
const peer = (field: number) => message(field, flat(optional(address), optional(text(2, anyText)), optional(text(4, anyText))));
const timestamp = message(1, flat(optional(fc.record({ field: fc.constant(1), kind: fc.constant('varint' as const), value: fc.nat() }))));
const http = message(
  2,
  flat(
    optional(text(1, fc.string({ maxLength: 8 }))),
    optional(text(2, fc.constantFrom('GET', 'POST'))),
    fc.array(headerEntry, { maxLength: 14 }),
    optional(text(4, fc.string({ maxLength: 12 }))),
    // host, sometimes twice: the last one wins
    fc.array(text(5, fc.oneof(fc.constantFrom('bench.agents.localhost:7080', 'a.agents.localhost'), anyText)), { maxLength: 2 }),
    optional(text(6, fc.constantFrom('http', 'https'))),
    optional(text(10, fc.constantFrom('HTTP/1.1', 'HTTP/2'))),
  ),
);
const request = message(4, flat(optional(timestamp), optional(http)));
const contextExtension = message(10, flat(optional(text(1, fc.string({ maxLength: 6 }))), optional(text(2, fc.string({ maxLength: 6 })))));
const attributes = message(1, flat(optional(peer(1)), optional(peer(2)), optional(request), fc.array(contextExtension, { maxLength: 2 })));

/** A CheckRequest's top-level fields (possibly none: the empty message). */
export const checkRequestWire: fc.Arbitrary<WireField[]> = fc
  .tuple(optional(attributes), fc.array(unknownField, { maxLength: 2 }))
  .chain(([known, unknown]) => fc.shuffledSubarray([...known, ...unknown], { minLength: known.length + unknown.length }));
