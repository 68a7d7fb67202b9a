import { HUFFMAN_CODE_LENGTHS, HUFFMAN_CODES } from './huffman-codes.js';

/**
 * The HPACK encoder h2spec writes its header blocks with: golang.org/x/net http2/hpack's
 * Encoder at 55a3084c9119, the version h2spec's go.mod pins (encode.go, hpack.go), ported
 * line for line. It indexes every field that fits the dynamic table, refers to the static
 * table's first entry with a matching name, and Huffman-codes a string only when that is
 * strictly shorter. Block sizes and dynamic-table state across blocks are therefore
 * h2spec's: "http2/4.2/3" needs five 4,000-byte fields to overflow a frame once Huffman-coded,
 * and "http2/6.10/1" sends its second dummy field as a one-byte index.
 */

export interface HeaderField {
  name: string;
  value: string;
  /** "Never indexed" (RFC 7541 §6.2.3); h2spec never sets it. */
  sensitive?: boolean;
}

export const field = (name: string, value: string): HeaderField => ({ name, value });

const UINT32_MAX = 0xffff_ffff;
const INITIAL_HEADER_TABLE_SIZE = 4096;

/** RFC 7541 Appendix A, as tables.go lists it (index 1 first). */
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];

/** "The size of an entry is the sum of its name's length in octets, its value's length in octets, and 32" (§4.1). */
const sizeOf = (f: HeaderField) => Buffer.byteLength(f.name, 'latin1') + Buffer.byteLength(f.value, 'latin1') + 32;

export class HpackEncoder {
  /** Oldest first, as Go's dynamicTable.ents: HPACK index 1 is the last entry. */
  private entries: HeaderField[] = [];
  private size = 0;
  private maxSize = INITIAL_HEADER_TABLE_SIZE;
  private minSize = UINT32_MAX;
  private readonly maxSizeLimit = INITIAL_HEADER_TABLE_SIZE;
  private tableSizeUpdate = false;

  /** h2spec's Conn.EncodeHeaders: one block, the encoding context kept for the next. */
  encode(fields: readonly HeaderField[]): Buffer {
    const out: number[] = [];
    for (const f of fields) this.writeField(out, f);
    return Buffer.from(out);
  }

  /** Encoder.SetMaxDynamicTableSize: the next field is preceded by the table size update(s). */
  setMaxDynamicTableSize(value: number): void {
    const v = Math.min(value, this.maxSizeLimit);
    if (v < this.minSize) this.minSize = v;
    this.tableSizeUpdate = true;
    this.maxSize = v;
    this.evict();
  }

  private writeField(out: number[], f: HeaderField): void {
    if (this.tableSizeUpdate) {
      this.tableSizeUpdate = false;
      if (this.minSize < this.maxSize) appendTableSize(out, this.minSize);
      this.minSize = UINT32_MAX;
      appendTableSize(out, this.maxSize);
    }
    const { index, nameValueMatch } = this.search(f);
    if (nameValueMatch) {
      appendVarInt(out, 7, index, 0x80);
      return;
    }
    const indexing = !f.sensitive && sizeOf(f) <= this.maxSize;
    if (indexing) this.add(f);
    const typeByte = f.sensitive ? 0x10 : indexing ? 0x40 : 0;
    if (index === 0) {
      out.push(typeByte);
      appendString(out, f.name);
    } else {
      appendVarInt(out, indexing ? 6 : 4, index, typeByte);
    }
    appendString(out, f.value);
  }

  /** Encoder.searchTable: the static table first (its first name match), then the dynamic table, newest first. */
  private search(f: HeaderField): { index: number; nameValueMatch: boolean } {
    let index = 0;
    for (const [i, [name, value]] of STATIC_TABLE.entries()) {
      if (name !== f.name) continue;
      if (index === 0) index = i + 1;
      if (f.sensitive || value !== f.value) continue;
      return { index: i + 1, nameValueMatch: true };
    }
    let dynamic = 0;
    for (let j = this.entries.length - 1; j >= 0; j -= 1) {
      const entry = this.entries[j]!;
      if (entry.name !== f.name) continue;
      if (dynamic === 0) dynamic = this.entries.length - j;
      if (f.sensitive || entry.value !== f.value) continue;
      return { index: this.entries.length - j + STATIC_TABLE.length, nameValueMatch: true };
    }
    if (index === 0 && dynamic !== 0) index = dynamic + STATIC_TABLE.length;
    return { index, nameValueMatch: false };
  }

  private add(f: HeaderField): void {
    this.entries.push({ name: f.name, value: f.value });
    this.size += sizeOf(f);
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize) this.size -= sizeOf(this.entries.shift()!);
  }
}

function appendTableSize(out: number[], size: number): void {
  appendVarInt(out, 5, size, 0x20);
}

/** §5.1: an integer on an `n`-bit prefix, `flags` in the first byte's high bits. */
function appendVarInt(out: number[], n: number, value: number, flags: number): void {
  const k = 2 ** n - 1;
  if (value < k) {
    out.push(flags | value);
    return;
  }
  out.push(flags | k);
  let rest = value - k;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push(0x80 | (rest % 128));
  out.push(rest);
}

/** §5.2: Huffman-coded only when strictly shorter (appendHpackString). h2spec's strings are ASCII. */
function appendString(out: number[], s: string): void {
  const bytes = Buffer.from(s, 'latin1');
  const huffmanLength = Math.ceil(bytes.reduce((bits, byte) => bits + HUFFMAN_CODE_LENGTHS[byte]!, 0) / 8);
  if (huffmanLength < bytes.length) {
    appendVarInt(out, 7, huffmanLength, 0x80);
    appendHuffman(out, bytes);
  } else {
    appendVarInt(out, 7, bytes.length, 0);
    out.push(...bytes);
  }
}

/** Codes are at most 30 bits, so fewer than 38 bits ever wait here: exact in a double. */
function appendHuffman(out: number[], bytes: Buffer): void {
  let pending = 0;
  let bits = 0;
  for (const byte of bytes) {
    const length = HUFFMAN_CODE_LENGTHS[byte]!;
    pending = pending * 2 ** length + HUFFMAN_CODES[byte]!;
    bits += length;
    while (bits >= 8) {
      bits -= 8;
      out.push(Math.floor(pending / 2 ** bits) & 0xff);
      pending %= 2 ** bits;
    }
  }
  // "the most significant bits of the code corresponding to the EOS symbol" (all ones) pad the last byte.
  if (bits > 0) out.push((pending << (8 - bits)) | ((1 << (8 - bits)) - 1));
}
