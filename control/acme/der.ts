/**
 * The little DER (ITU-T X.690) an ACME client needs: enough to write a PKCS#10 request
 * and to find two fields in a certificate. Tags are single-byte (every tag X.509 and
 * PKCS#10 use is below 31), so the long tag form is neither written nor read.
 */

/** Universal tags and the class bits this module uses (X.690 §8.1.2). */
export const DerTag = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  sequence: 0x30,
  set: 0x31,
} as const;

const CONTEXT_SPECIFIC = 0x80;
const CONSTRUCTED = 0x20;

/** A context-specific tag [n]: constructed for EXPLICIT or structured IMPLICIT types, primitive otherwise. */
export function contextTag(n: number, constructed: boolean): number {
  if (n < 0 || n > 30) throw new RangeError(`context tag [${n}] needs the long tag form, which this encoder does not write`);
  return CONTEXT_SPECIFIC | (constructed ? CONSTRUCTED : 0) | n;
}

// ---- writing ---------------------------------------------------------------------------

/** Tag, definite length (short form under 128, else long form: X.690 §8.1.3), content. */
export function derElement(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(content.length), content]);
}

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export const derSequence = (...items: Buffer[]): Buffer => derElement(DerTag.sequence, Buffer.concat(items));

/** A SET OF; DER wants its members sorted by their encodings (X.690 §11.6). */
export const derSet = (...items: Buffer[]): Buffer => derElement(DerTag.set, Buffer.concat([...items].sort(Buffer.compare)));

/** A non-negative INTEGER from its big-endian magnitude: minimal, with a 0x00 when the high bit would read as a sign (X.690 §8.3). */
export function derUnsignedInteger(magnitude: Buffer | number): Buffer {
  let bytes = typeof magnitude === 'number' ? numberBytes(magnitude) : magnitude;
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  bytes = bytes.subarray(start);
  if (bytes.length === 0) bytes = Buffer.from([0]);
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return derElement(DerTag.integer, bytes);
}

function numberBytes(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${value} is no non-negative safe integer`);
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from(bytes);
}

/** An OBJECT IDENTIFIER from dotted form: the first two arcs share a byte, the rest base 128 (X.690 §8.19). */
export function derOid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  if (arcs.length < 2 || arcs.some((arc) => !Number.isSafeInteger(arc) || arc < 0)) throw new RangeError(`"${dotted}" is no object identifier`);
  const bytes: number[] = [];
  for (const arc of [arcs[0]! * 40 + arcs[1]!, ...arcs.slice(2)]) {
    const base128: number[] = [arc % 128];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128)) base128.unshift(0x80 | (rest % 128));
    bytes.push(...base128);
  }
  return derElement(DerTag.oid, Buffer.from(bytes));
}

export const derUtf8String = (text: string): Buffer => derElement(DerTag.utf8String, Buffer.from(text, 'utf8'));
export const derOctetString = (bytes: Buffer): Buffer => derElement(DerTag.octetString, bytes);
/** A BIT STRING of whole bytes: the leading octet says zero unused bits (X.690 §8.6.2). */
export const derBitString = (bytes: Buffer): Buffer => derElement(DerTag.bitString, Buffer.concat([Buffer.from([0]), bytes]));

// ---- reading ---------------------------------------------------------------------------

/** One element as read: its tag and its content (a view into the input). */
export interface DerNode {
  readonly tag: number;
  readonly content: Buffer;
}

/** The element at the start of `input`, and how many bytes it took. */
export function readDerElement(input: Buffer): { node: DerNode; length: number } {
  if (input.length < 2) throw new Error('DER: truncated element header');
  const tag = input[0]!;
  if ((tag & 0x1f) === 0x1f) throw new Error('DER: long-form tags are not supported');
  let offset = 2;
  let length = input[1]!;
  if (length & 0x80) {
    const count = length & 0x7f;
    // 0x80 is BER's indefinite length, which DER forbids (X.690 §10.1).
    if (count === 0 || count > 4) throw new Error('DER: unsupported length form');
    if (input.length < 2 + count) throw new Error('DER: truncated length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + input[2 + i]!;
    offset += count;
  }
  if (offset + length > input.length) throw new Error('DER: element runs past the end of its input');
  return { node: { tag, content: input.subarray(offset, offset + length) }, length: offset + length };
}

/** The one element `input` holds. */
export function readDer(input: Buffer): DerNode {
  const { node, length } = readDerElement(input);
  if (length !== input.length) throw new Error('DER: trailing bytes after the element');
  return node;
}

/** The elements a constructed element's content holds, in order. */
export function derChildren(node: DerNode): DerNode[] {
  const children: DerNode[] = [];
  for (let rest = node.content; rest.length > 0; ) {
    const { node: child, length } = readDerElement(rest);
    children.push(child);
    rest = rest.subarray(length);
  }
  return children;
}

/** An OBJECT IDENTIFIER's content back in dotted form. */
export function decodeOid(content: Buffer): string {
  const arcs: number[] = [];
  let value = 0;
  for (const byte of content) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  if (arcs.length === 0) throw new Error('DER: empty object identifier');
  const first = arcs.shift()!;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...arcs].join('.');
}
