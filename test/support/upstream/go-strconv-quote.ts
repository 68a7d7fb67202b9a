import { decodeRune, encodeRune, RUNE_ERROR, RUNE_SELF, validRune } from './go-utf8.js';

/**
 * Go's strconv.Quote, which `fmt.Sprintf("%q", s)` uses for a string (fmt/print.go →
 * fmt/format.go `fmtQ`, without `+` or `#` flags). consul-template's
 * dependency.NomadVarItem.MarshalJSON is exactly that, so these are the bytes json.Marshal
 * then has to accept as JSON. Ported from golang/go src/strconv/quote.go
 * (`appendQuotedWith`, `appendEscapedRune`, `IsPrint`).
 */

const LOWER_HEX = '0123456789abcdef';
const bytesOf = (text: string) => Buffer.from(text, 'latin1');

/**
 * quote.go `IsPrint`: the Latin-1 fast path as written there; above U+00FF "the same
 * definition as unicode.IsPrint: letters, numbers, punctuation, symbols" (and marks, which
 * unicode.IsPrint counts: categories L, M, N, P, S), taken from Node's Unicode tables
 * instead of Go's isprint.go. The two can differ only for characters one Unicode version
 * assigned and the other did not.
 */
export function isPrint(rune: number): boolean {
  if (rune <= 0xff) {
    if (rune >= 0x20 && rune <= 0x7e) return true; // all ASCII from space through DEL-1
    if (rune >= 0xa1 && rune <= 0xff) return rune !== 0xad; // ¡ through ÿ, but the soft hyphen
    return false;
  }
  return /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(String.fromCodePoint(rune));
}

/** quote.go `Quote`: `appendQuotedWith(s, '"', ASCIIonly=false, graphicOnly=false)`. */
export function quote(src: Uint8Array): Buffer {
  const out: Buffer[] = [bytesOf('"')];
  for (let i = 0, width = 0; i < src.length; i += width) {
    let rune = src[i]!;
    width = 1;
    if (rune >= RUNE_SELF) [rune, width] = decodeRune(src, i);
    if (width === 1 && rune === RUNE_ERROR) {
      // An invalid byte is written as \x.. (quote.go: "width == 1 && r == utf8.RuneError").
      out.push(bytesOf(`\\x${LOWER_HEX[src[i]! >> 4]}${LOWER_HEX[src[i]! & 0xf]}`));
      continue;
    }
    out.push(escapedRune(rune, 0x22));
  }
  out.push(bytesOf('"'));
  return Buffer.concat(out);
}

/** quote.go `QuoteRune` (what `%q` prints for a byte or rune), as a JS string for messages. */
export function quoteRune(rune: number): string {
  return `'${escapedRune(validRune(rune) ? rune : 0xfffd, 0x27).toString('utf8')}'`;
}

/** quote.go `appendEscapedRune` with ASCIIonly and graphicOnly false. */
function escapedRune(rune: number, quoteChar: number): Buffer {
  if (rune === quoteChar || rune === 0x5c) return Buffer.from([0x5c, rune]); // always backslashed
  if (isPrint(rune)) return encodeRune(rune);
  switch (rune) {
    case 0x07:
      return bytesOf('\\a');
    case 0x08:
      return bytesOf('\\b');
    case 0x0c:
      return bytesOf('\\f');
    case 0x0a:
      return bytesOf('\\n');
    case 0x0d:
      return bytesOf('\\r');
    case 0x09:
      return bytesOf('\\t');
    case 0x0b:
      return bytesOf('\\v');
  }
  // `case r < ' ' || r == 0x7f`: DEL is \x7f too. (The golang/go snapshot in our search index
  // predates that case and reads `case r < ' '`; the go1.20.4 quote.go, copied with its
  // address in other repositories, has it; Nomad builds with Go 1.26.5.)
  if (rune < 0x20 || rune === 0x7f) return bytesOf(`\\x${LOWER_HEX[rune >> 4]}${LOWER_HEX[rune & 0xf]}`);
  const r = validRune(rune) ? rune : 0xfffd;
  if (r < 0x10000) return bytesOf(`\\u${r.toString(16).padStart(4, '0')}`);
  return bytesOf(`\\U${r.toString(16).padStart(8, '0')}`);
}
