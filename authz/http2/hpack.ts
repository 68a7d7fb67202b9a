import { HUFFMAN_CODES } from './huffman-codes.js';

/**
 * HPACK (RFC 7541) for authz's HTTP/2 server: a full decoder, because every header block
 * a peer sends changes the dynamic table whether or not its fields are read, and an encoder
 * that only writes literals without indexing, which every decoder takes and which leaves
 * the peer's table alone. Answers here are a few constant fields, encoded once.
 */

/** A header block that cannot be decoded: a connection error of type COMPRESSION_ERROR (RFC 7541 §2.2). */
export class CompressionError extends Error {
  override readonly name = 'CompressionError';
}

/** RFC 7541 Appendix A, index 1 first. */
const STATIC_TABLE: ReadonlyArray<readonly [string, string]> = [
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

/** "The additional 32 octets account for an estimated overhead associated with an entry" (§4.1). */
const ENTRY_OVERHEAD = 32;
/** No field here is near this long; a longer integer is a hostile or broken block. */
const MAX_INTEGER = 2 ** 31 - 1;
/**
 * Continuation bytes after an integer's prefix: 5 carry 35 bits, past MAX_INTEGER. More
 * bytes only ever encode a hostile value: a long run of zero bytes once reached 0 × 2^shift
 * = NaN, which no comparison refuses (nghttp2's decode_length stops at the same point).
 */
const MAX_INTEGER_CONTINUATION_BYTES = 5;

// The Huffman code as a binary tree in two flat arrays: node n's children are at
// CHILD[2n] (bit 0) and CHILD[2n + 1] (bit 1); SYMBOL[n] is the symbol a leaf decodes to.
const CHILD: number[] = [0, 0];
const SYMBOL: number[] = [-1];
const EOS = 256;
for (const [symbol, [bits, code]] of HUFFMAN_CODES.entries()) {
  let node = 0;
  for (let i = 0; i < bits; i += 1) {
    const slot = node * 2 + ((code >>> (31 - i)) & 1);
    if (CHILD[slot] === 0) {
      CHILD[slot] = SYMBOL.length;
      SYMBOL.push(-1);
      CHILD.push(0, 0);
    }
    node = CHILD[slot]!;
  }
  SYMBOL[node] = symbol;
}

/**
 * §5.2: "A padding strictly longer than 7 bits MUST be treated as a decoding error. A
 * padding not corresponding to the most significant bits of the code for the EOS symbol
 * MUST be treated as a decoding error. A Huffman-encoded string literal containing the EOS
 * symbol MUST be treated as a decoding error."
 */
function huffmanDecode(block: Buffer, start: number, end: number): string {
  let decoded = '';
  let node = 0;
  let paddingBits = 0;
  let paddingAllOnes = true;
  for (let i = start; i < end; i += 1) {
    const byte = block[i]!;
    for (let shift = 7; shift >= 0; shift -= 1) {
      const bit = (byte >> shift) & 1;
      node = CHILD[node * 2 + bit]!;
      if (node === 0) throw new CompressionError('invalid Huffman code');
      paddingBits += 1;
      paddingAllOnes &&= bit === 1;
      const symbol = SYMBOL[node]!;
      if (symbol === -1) continue;
      if (symbol === EOS) throw new CompressionError('EOS in a Huffman-encoded string');
      decoded += String.fromCharCode(symbol);
      node = 0;
      paddingBits = 0;
      paddingAllOnes = true;
    }
  }
  if (paddingBits > 7 || !paddingAllOnes) throw new CompressionError('invalid Huffman padding');
  return decoded;
}

/** Receives each field of a block in order; names are as sent (HTTP/2 requires lowercase). */
export type HeaderField = (name: string, value: string) => void;

/** One connection's decoding context (§2.2): feed it every header block the peer sends, in order. */
export class HpackDecoder {
  /** The dynamic table, newest first, and each entry's size (§4.1). */
  private readonly entries: (readonly [name: string, value: string])[] = [];
  private readonly entrySizes: number[] = [];
  private tableSize = 0;
  private maxTableSize: number;
  private at = 0;
  private end = 0;

  /** `settingsTableSize`: the SETTINGS_HEADER_TABLE_SIZE this side advertised (4096 unless changed). */
  constructor(private readonly settingsTableSize = 4096) {
    this.maxTableSize = settingsTableSize;
  }

  /** The dynamic table's size as §4.1 counts it; never above the size in force. */
  get dynamicTableSize(): number {
    return this.tableSize;
  }

  decode(block: Buffer, onField: HeaderField): void {
    this.at = 0;
    this.end = block.length;
    let fieldsSeen = false;
    while (this.at < this.end) {
      const first = block[this.at]!;
      if (first & 0x80) {
        // §6.1 Indexed Header Field.
        const [name, value] = this.entry(this.integer(block, 7));
        onField(name, value);
      } else if (first & 0x40) {
        // §6.2.1 Literal Header Field with Incremental Indexing.
        const index = this.integer(block, 6);
        const name = index === 0 ? this.string(block) : this.entry(index)[0];
        const value = this.string(block);
        this.insert(name, value);
        onField(name, value);
      } else if (first & 0x20) {
        // §4.2: a Dynamic Table Size Update "MUST occur at the beginning of the first
        // header block following the change to the dynamic table size"; the new size
        // must not exceed the SETTINGS_HEADER_TABLE_SIZE this side advertised.
        if (fieldsSeen) throw new CompressionError('a dynamic table size update after a header field');
        const size = this.integer(block, 5);
        if (size > this.settingsTableSize) throw new CompressionError(`dynamic table size ${size} above the advertised ${this.settingsTableSize}`);
        this.maxTableSize = size;
        this.evictTo(size);
        continue;
      } else {
        // §6.2.2 without indexing (0000xxxx) and §6.2.3 never indexed (0001xxxx).
        const index = this.integer(block, 4);
        const name = index === 0 ? this.string(block) : this.entry(index)[0];
        onField(name, this.string(block));
      }
      fieldsSeen = true;
    }
  }

  /** §5.1 integer with an N-bit prefix, starting at the current byte. */
  private integer(block: Buffer, prefixBits: number): number {
    const limit = (1 << prefixBits) - 1;
    let value = block[this.at++]! & limit;
    if (value < limit) return value;
    for (let shift = 0; shift < 7 * MAX_INTEGER_CONTINUATION_BYTES; shift += 7) {
      if (this.at >= this.end) throw new CompressionError('an integer runs past the end of the block');
      const byte = block[this.at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (!(value <= MAX_INTEGER)) throw new CompressionError('an integer too large');
      if ((byte & 0x80) === 0) return value;
    }
    throw new CompressionError(`an integer of more than ${MAX_INTEGER_CONTINUATION_BYTES} continuation bytes`);
  }

  /** §5.2 string literal. */
  private string(block: Buffer): string {
    if (this.at >= this.end) throw new CompressionError('a string literal missing at the end of the block');
    const huffman = (block[this.at]! & 0x80) !== 0;
    const length = this.integer(block, 7);
    const start = this.at;
    if (length > this.end - start) throw new CompressionError('a string literal runs past the end of the block');
    this.at += length;
    return huffman ? huffmanDecode(block, start, this.at) : block.toString('latin1', start, this.at);
  }

  /** §2.3.3: static entries 1-61, then the dynamic table, newest first. */
  private entry(index: number): readonly [string, string] {
    if (index === 0) throw new CompressionError('header field index 0');
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]!;
    const entry = this.entries[index - STATIC_TABLE.length - 1];
    if (!entry) throw new CompressionError(`header field index ${index} beyond the tables`);
    return entry;
  }

  /** §4.4: an entry larger than the table empties it and is not added. */
  private insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    this.evictTo(this.maxTableSize - size);
    if (size > this.maxTableSize) return;
    this.entries.unshift([name, value]);
    this.entrySizes.unshift(size);
    this.tableSize += size;
  }

  private evictTo(limit: number): void {
    while (this.tableSize > Math.max(limit, 0)) {
      this.entries.pop();
      this.tableSize -= this.entrySizes.pop()!;
    }
  }
}

/**
 * A header block of literals without indexing (§6.2.2), names and values as raw octets:
 * the peer's dynamic table is untouched, so each block stands alone and can be reused.
 * Fields are given in order; values must be visible ASCII (what gRPC's headers are).
 */
export function encodeHeaderBlock(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  const bytes: number[] = [];
  const integer = (value: number, prefixBits: number, firstBits: number) => {
    const limit = (1 << prefixBits) - 1;
    if (value < limit) {
      bytes.push(firstBits | value);
      return;
    }
    bytes.push(firstBits | limit);
    let rest = value - limit;
    for (; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes.push((rest % 0x80) | 0x80);
    bytes.push(rest);
  };
  const literal = (text: string) => {
    integer(text.length, 7, 0);
    for (let i = 0; i < text.length; i += 1) bytes.push(text.charCodeAt(i) & 0xff);
  };
  for (const [name, value] of fields) {
    const indexed = name === ':status' ? STATIC_TABLE.findIndex(([n, v]) => n === name && v === value) : -1;
    if (indexed >= 0) {
      // §6.1: ':status: 200' and its kin are whole entries of the static table.
      integer(indexed + 1, 7, 0x80);
      continue;
    }
    const nameIndex = STATIC_TABLE.findIndex(([n]) => n === name);
    integer(nameIndex + 1, 4, 0x00);
    if (nameIndex === -1) literal(name);
    literal(value);
  }
  return Buffer.from(bytes);
}
