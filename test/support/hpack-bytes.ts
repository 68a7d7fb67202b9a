import { HUFFMAN_CODES } from '../../authz/http2/huffman-codes.js';

/**
 * HPACK representations (RFC 7541 §5-6) written byte by byte, so that a test can write what
 * no encoder would: integers that run on, table size updates above the limit, Huffman
 * strings with bad padding, indexes past the tables. authz's own encoder writes literals only.
 */

/** §5.1: `value` with an N-bit prefix; `pattern` holds the first byte's other bits. */
export function hpackInteger(value: number, prefixBits: number, pattern = 0): number[] {
  const limit = (1 << prefixBits) - 1;
  if (value < limit) return [pattern | value];
  const bytes = [pattern | limit];
  let rest = value - limit;
  for (; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes.push((rest % 0x80) | 0x80);
  bytes.push(rest);
  return bytes;
}

/**
 * An integer whose prefix is all ones and whose `continuationBytes` bytes of `fill` (0x80:
 * "more follows", adding zero) run on before a last byte `last`. Past 147 such bytes a
 * decoder computing (byte & 0x7f) * 2^shift in doubles reaches 0 × Infinity = NaN.
 */
export function runawayInteger(prefixBits: number, pattern: number, continuationBytes: number, fill = 0x80, last = 0x00): number[] {
  return [pattern | ((1 << prefixBits) - 1), ...new Array<number>(continuationBytes).fill(fill), last];
}

/** §5.2: a string literal, raw octets or Huffman-coded (Appendix B). */
export function hpackString(text: string | Uint8Array, huffman = false): number[] {
  const octets = typeof text === 'string' ? Buffer.from(text, 'latin1') : Buffer.from(text);
  const body = huffman ? huffmanEncode(octets) : [...octets];
  return [...hpackInteger(body.length, 7, huffman ? 0x80 : 0), ...body];
}

/** Appendix B, padded with the most significant bits of EOS (all ones), as §5.2 asks. */
export function huffmanEncode(octets: Uint8Array): number[] {
  const bytes: number[] = [];
  let current = 0;
  let used = 0;
  for (const octet of octets) {
    const [bits, code] = HUFFMAN_CODES[octet]!;
    for (let i = 0; i < bits; i += 1) {
      current = (current << 1) | ((code >>> (31 - i)) & 1);
      used += 1;
      if (used === 8) {
        bytes.push(current);
        current = 0;
        used = 0;
      }
    }
  }
  if (used > 0) bytes.push((current << (8 - used)) | ((1 << (8 - used)) - 1));
  return bytes;
}

/** §6.1 Indexed Header Field. */
export const indexedField = (index: number): number[] => hpackInteger(index, 7, 0x80);

/** §6.3 Dynamic Table Size Update. */
export const tableSizeUpdate = (size: number): number[] => hpackInteger(size, 5, 0x20);

export type LiteralKind = 'incremental' | 'without-indexing' | 'never-indexed';

/** §6.2.1-6.2.3: the first byte's pattern and prefix of each literal representation. */
const LITERAL_FORM: Readonly<Record<LiteralKind, readonly [pattern: number, prefixBits: number]>> = {
  incremental: [0x40, 6],
  'without-indexing': [0x00, 4],
  'never-indexed': [0x10, 4],
};

/** A literal field: its name an index into the tables, or a literal string. */
export function literalField(kind: LiteralKind, name: number | string | Uint8Array, value: string | Uint8Array, huffman = { name: false, value: false }): number[] {
  const [pattern, prefixBits] = LITERAL_FORM[kind];
  if (typeof name === 'number') return [...hpackInteger(name, prefixBits, pattern), ...hpackString(value, huffman.value)];
  return [pattern, ...hpackString(name, huffman.name), ...hpackString(value, huffman.value)];
}
