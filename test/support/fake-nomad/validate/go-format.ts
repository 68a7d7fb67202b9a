/**
 * The Go formatting Nomad's error messages are made of, so the fake answers with the
 * same text as Nomad: `time.Duration`'s `%v`, `%q` of strings and string arrays, and the
 * errors of `strconv.ParseUint`.
 */

const SECOND = 1_000_000_000;

/** Go's time/time.go, `Duration.String` (with `fmtFrac` and `fmtInt`): "1h30m0s", "500ms", "0s". */
export function goDuration(nanoseconds: number): string {
  const negative = nanoseconds < 0;
  let u = Math.abs(Math.trunc(nanoseconds));
  let out: string;
  if (u < SECOND) {
    if (u === 0) return '0s';
    const [unit, precision] = u < 1_000 ? ['ns', 0] : u < 1_000_000 ? ['µs', 3] : ['ms', 6];
    const [fraction, whole] = goFraction(u, precision as number);
    out = `${whole}${fraction}${unit}`;
  } else {
    const [fraction, seconds] = goFraction(u, 9);
    u = seconds;
    out = `${u % 60}${fraction}s`;
    u = Math.floor(u / 60);
    if (u > 0) {
      out = `${u % 60}m${out}`;
      u = Math.floor(u / 60);
      if (u > 0) out = `${u}h${out}`;
    }
  }
  return negative ? `-${out}` : out;
}

/** `fmtFrac`: the fraction of v/10**precision without trailing zeros, and the integer part. */
function goFraction(v: number, precision: number): [string, number] {
  let digits = '';
  let print = false;
  for (let i = 0; i < precision; i += 1) {
    const digit = v % 10;
    print = print || digit !== 0;
    if (print) digits = `${digit}${digits}`;
    v = Math.floor(v / 10);
  }
  return [print ? `.${digits}` : '', v];
}

const SIMPLE_ESCAPES: Record<string, string> = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '"': '\\"', '\\': '\\\\' };
/** Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** Go's strconv/quote.go, `Quote` (`%q`), or `QuoteToASCII` (`%+q`) when asciiOnly. */
export function goQuote(text: string, asciiOnly = false): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (SIMPLE_ESCAPES[char]) out += SIMPLE_ESCAPES[char];
    else if (code < 0x80 ? code >= 0x20 && code < 0x7f : !asciiOnly && PRINTABLE.test(char)) out += char;
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (code < 0x10000) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** `%q` of a []string or [N]string: `["a" "b"]`. */
export const goQuoteList = (items: readonly string[]) => `[${items.map((item) => goQuote(item)).join(' ')}]`;

/** `%v` of a []string: `[a b]`. */
export const goList = (items: readonly string[]) => `[${items.join(' ')}]`;

/** Go's strconv/atoi.go, `ParseUint(s, base, bitSize)`: the error text, or null when it parses. */
export function goParseUintError(text: string, base: number, bitSize: number): string | null {
  const digits = base === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  // ParseUint accepts underscores only with a base prefix (base 0), never for base 8 or 10.
  if (!digits.test(text)) return `strconv.ParseUint: parsing ${goQuote(text)}: invalid syntax`;
  if (BigInt(`0${base === 8 ? 'o' : ''}${text}`) >= 1n << BigInt(bitSize)) return `strconv.ParseUint: parsing ${goQuote(text)}: value out of range`;
  return null;
}
