import { bytes, group, STREAM_ID, type CaseKit, type H2specCase } from './case.js';
import { ErrorCode, Setting } from './frames.js';
import { connectionError } from './shapes.js';

/** h2spec's `hpack` section, RFC 7541 (hpack/*.go), in h2spec's order: each a decoding error, COMPRESSION_ERROR. */

/** A Check whose header block has `representation` appended (or prepended): a connection error of type COMPRESSION_ERROR. */
const decodingError = (desc: string, representation: (k: CaseKit) => Buffer, where: 'append' | 'prepend' = 'append') =>
  connectionError(
    desc,
    (k) => {
      const block = k.conn.encodeHeaders(k.headers());
      const rep = representation(k);
      k.sendCheck(STREAM_ID, { blockFragment: Buffer.concat(where === 'append' ? [block, rep] : [rep, block]) });
    },
    ErrorCode.COMPRESSION_ERROR,
  );

const indexAddressSpace = group('hpack', '2.3.3', 'hpack/2_3_3_index_address_space.go', [
  // Index 70: past the static table's 61 entries and the few this block adds.
  decodingError('Sends a indexed header field representation with invalid index', () => bytes('\xC6')),
  decodingError('Sends a literal header field representation with invalid index', () => bytes('\x7F\x07\x00')),
]);

const maximumTableSize = group('hpack', '4.2', 'hpack/4_2_maximum_table_size.go', [
  decodingError('Sends a dynamic table size update at the end of header block', () => bytes('\x21')),
]);

const stringLiteralRepresentation = group('hpack', '5.2', 'hpack/5_2_string_literal_representation.go', [
  // x-test: test, literal without indexing, the value's Huffman code followed by a whole extra byte of padding.
  decodingError('Sends a Huffman-encoded string literal representation with padding longer than 7 bits', () => bytes('\x00\x85\xf2\xb2\x4a\x84\xff\x84\x49\x50\x9f\xff')),
  // ...padded with zeros instead of EOS's leading ones.
  decodingError('Sends a Huffman-encoded string literal representation padded by zero', () => bytes('\x00\x85\xf2\xb2\x4a\x84\xff\x83\x49\x50\x90')),
  // x-test: tes{EOS}t.
  decodingError('Sends a Huffman-encoded string literal representation containing the EOS symbol', () => bytes('\x00\x85\xf2\xb2\x4a\x84\xff\x87\x49\x51\xff\xff\xff\xfa\x7f')),
]);

const indexedHeaderFieldRepresentation = group('hpack', '6.1', 'hpack/6_1_indexed_header_field_representation.go', [
  decodingError('Sends a indexed header field representation with index 0', () => bytes('\x80')),
]);

/** §6.3: a dynamic table size update, an integer on a 5-bit prefix under 001. */
function tableSizeUpdate(size: number): Buffer {
  if (size < 31) return Buffer.from([0x20 | size]);
  const out = [0x20 | 31];
  let rest = size - 31;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push(0x80 | (rest % 128));
  out.push(rest);
  return Buffer.from(out);
}

const dynamicTableSizeUpdate = group('hpack', '6.3', 'hpack/6_3_dynamic_table_size_update.go', [
  decodingError(
    'Sends a dynamic table size update larger than the value of SETTINGS_HEADER_TABLE_SIZE',
    ({ conn }) => tableSizeUpdate((conn.settings.get(Setting.HEADER_TABLE_SIZE) ?? 4096) + 1),
    'prepend',
  ),
]);

export const HPACK_CASES: H2specCase[] = [...indexAddressSpace, ...maximumTableSize, ...stringLiteralRepresentation, ...indexedHeaderFieldRepresentation, ...dynamicTableSizeUpdate];
