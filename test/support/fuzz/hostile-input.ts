import fc from 'fast-check';

/**
 * The input a careless or hostile client sends: text Postgres refuses, odd Unicode,
 * values too big or too deep, wrong types, malformed encodings. Each arbitrary is small
 * and named, so a failing case reads as what it is.
 */

/** Text with a NUL somewhere (Postgres refuses U+0000 in text and jsonb). */
export const withNul = fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })).map(([a, b]) => `${a}\u0000${b}`);

/** Text with half a surrogate pair: not Unicode, refused by jsonb, mangled into text. */
export const withLoneSurrogate = fc
  .tuple(fc.string({ maxLength: 8 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ maxLength: 8 }))
  .map(([a, half, b]) => `${a}${String.fromCharCode(half)}${b}`);

/** Valid Unicode that often trips code: astral planes, combining marks, bidi controls, zero-width and ASCII control characters. */
export const oddUnicode = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme-composite', maxLength: 20 }),
  fc.constantFrom('\u202e\u0041\u202d', '\u200b', '\ufeff', 'e\u0301', '😀👩‍👩‍👧', '𝔘𝔫𝔦', '\u0001\u001f\u007f', '\r\n', ' ', '', '\\', '"', "'; drop table agents;--", '%00', '..', '../..', '\ufffd'),
);

/** Longer than any field allows; some past the 1 MiB body limit. */
export const hugeString = fc.oneof(
  fc.integer({ min: 257, max: 40_000 }).map((n) => 'x'.repeat(n)),
  fc.constantFrom('é'.repeat(300_000), 'y'.repeat(1024 * 1024 + 1)),
);

/** JSON nested deeper than any schema: serialised by `bodyText` without recursion. */
export class DeepNesting {
  constructor(readonly depth: number, readonly open: '[' | '{"a":') {}
  text(): string {
    return this.open.repeat(this.depth) + (this.open === '[' ? ']' : '}').repeat(this.depth);
  }
}
export const deepNesting = fc
  .tuple(fc.constantFrom(64, 1_000, 100_000), fc.constantFrom<'[' | '{"a":'>('[', '{"a":'))
  .map(([depth, open]) => new DeepNesting(depth, open));

/** A value of some other type than a field wants. */
export const wrongType = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, [], {}, [null], { '': '' }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Anything a field could be sent as. */
export const hostileValue = fc.oneof(withNul, withLoneSurrogate, oddUnicode, hugeString, deepNesting, wrongType);

/** JSON text of `value`; DeepNesting is written out as text, since JSON.stringify would recurse. */
export function bodyText(value: unknown): string {
  const deep: DeepNesting[] = [];
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (!(item instanceof DeepNesting)) return item;
    deep.push(item);
    return `\u0000deep${deep.length - 1}\u0000`;
  });
  if (text === undefined) return '';
  return text.replace(/"\\u0000deep(\d+)\\u0000"/g, (_, index: string) => deep[Number(index)]!.text());
}

/*
 * Paths and queries stay under Node's 16 KiB limit for the request head: past it Node's
 * HTTP parser answers 431 itself, with no body, before the request reaches the API.
 */

/** A path segment: a real id, text percent-encoded as a client would, or raw malformed escapes. */
export const pathSegment = (realIds: string[]) =>
  fc.oneof(
    ...(realIds.length > 0 ? [fc.constantFrom(...realIds)] : []),
    fc.oneof(withNul, oddUnicode, fc.string({ maxLength: 300 })).map((text) => encodeURIComponent(text)),
    fc.constantFrom('%00', 'agt_%00', '%ZZ', '%', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%2F', '%2e%2e', 'x'.repeat(2000)),
  );

/** A query value as sent on the wire (already encoded). */
export const queryValue = fc.oneof(
  fc.oneof(withNul, oddUnicode, fc.integer({ min: 257, max: 2000 }).map((n) => 'q'.repeat(n)), fc.integer().map(String)).map((text) => encodeURIComponent(text)),
  fc.constantFrom('%00', '%ZZ', '%ED%A0%80', '', '-1', '1e400', '0x10', 'NaN'),
);

/** Raw bodies that are not JSON at all, or not what Content-Type says. */
export const malformedBody = fc.oneof(
  fc.record({ raw: fc.string({ maxLength: 200 }), contentType: fc.constant('application/json') }),
  fc.record({ raw: fc.constantFrom('{"a":', '[', '{"a":1,}', 'nul', '"\\ud800"', '"\\u0000"', '{"\\u0000":1}', '\u0000'), contentType: fc.constant('application/json') }),
  fc.record({ raw: fc.constant('{"name":"x"}'), contentType: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1') }),
);
