import { quote } from './go-strconv-quote.js';
import { decodeRune, encodeRune, RUNE_ERROR, RUNE_SELF } from './go-utf8.js';

/**
 * Go's encoding/json, the two paths consul-template's `toJSON` (json.Marshal) takes for
 * what our templates hand it: a plain string, and a value whose MarshalJSON writes its own
 * bytes (dependency.NomadVarItem). Ported from golang/go src/encoding/json: encode.go,
 * indent.go, scanner.go, tables.go (the v1 encoder, which Go 1.26 still builds unless
 * GOEXPERIMENT=jsonv2; Nomad builds with Go 1.26.5, its .go-version).
 */

const HEX = '0123456789abcdef';
const bytesOf = (text: string) => Buffer.from(text, 'latin1');

/** tables.go `htmlSafeSet`: printable ASCII and DEL, but not `"`, `\`, `<`, `>`, `&`. */
const htmlSafe = (b: number) => b >= 0x20 && b <= 0x7f && b !== 0x22 && b !== 0x5c && b !== 0x3c && b !== 0x3e && b !== 0x26;
/** tables.go `safeSet`: the same, with `<`, `>`, `&` allowed. */
const safe = (b: number) => htmlSafe(b) || b === 0x3c || b === 0x3e || b === 0x26;

/**
 * encode.go `appendString`: `src` as a JSON string. With escapeHTML (json.Marshal always
 * sets it, encode.go `Marshal`) `<`, `>`, `&` become `\u003c`, `\u003e`, `\u0026`;
 * `\b \f \n \r \t` get short escapes, other bytes below 0x20 `\u00XX`; an invalid UTF-8
 * byte becomes `\ufffd`; U+2028 and U+2029 are always escaped.
 */
export function appendString(src: Uint8Array, escapeHTML: boolean): Buffer {
  const out: Buffer[] = [bytesOf('"')];
  let start = 0;
  let i = 0;
  const flush = (to: number) => out.push(Buffer.from(src.subarray(start, to)));
  while (i < src.length) {
    const b = src[i]!;
    if (b < RUNE_SELF) {
      if (htmlSafe(b) || (!escapeHTML && safe(b))) {
        i++;
        continue;
      }
      flush(i);
      switch (b) {
        case 0x5c:
        case 0x22:
          out.push(Buffer.from([0x5c, b]));
          break;
        case 0x08:
          out.push(bytesOf('\\b'));
          break;
        case 0x0c:
          out.push(bytesOf('\\f'));
          break;
        case 0x0a:
          out.push(bytesOf('\\n'));
          break;
        case 0x0d:
          out.push(bytesOf('\\r'));
          break;
        case 0x09:
          out.push(bytesOf('\\t'));
          break;
        default:
          // Bytes < 0x20 but \b \f \n \r \t, and (escapeHTML) `<`, `>`, `&`.
          out.push(bytesOf(`\\u00${HEX[b >> 4]}${HEX[b & 0xf]}`));
      }
      i++;
      start = i;
      continue;
    }
    const [rune, size] = decodeRune(src, i);
    if (rune === RUNE_ERROR && size === 1) {
      flush(i);
      out.push(bytesOf('\\ufffd'));
      i += size;
      start = i;
      continue;
    }
    if (rune === 0x2028 || rune === 0x2029) {
      flush(i);
      out.push(bytesOf(`\\u202${HEX[rune & 0xf]}`));
      i += size;
      start = i;
      continue;
    }
    i += size;
  }
  flush(src.length);
  out.push(bytesOf('"'));
  return Buffer.concat(out);
}

/** encode.go `Marshal` of a Go string: `appendString` with escapeHTML. */
export const marshalString = (src: Uint8Array): Buffer => appendString(src, true);

/** encode.go `MarshalerError` as its Error() reads. */
export class MarshalerError extends Error {
  constructor(typeName: string, cause: Error) {
    super(`json: error calling MarshalJSON for type ${typeName}: ${cause.message}`);
    this.name = 'MarshalerError';
  }
}

/** scanner.go `SyntaxError`. */
export class JsonSyntaxError extends Error {
  constructor(message: string, readonly offset: number) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

/**
 * encode.go `marshalerEncoder`: a Marshaler's bytes are copied through indent.go
 * `appendCompact` (escape = escapeHTML = true under json.Marshal), which validates them as
 * JSON, escapes `<`, `>`, `&`, U+2028, U+2029 inside them, and drops insignificant space.
 * Invalid output fails the whole Marshal with a MarshalerError.
 */
export function marshalMarshalerOutput(typeName: string, output: Uint8Array): Buffer {
  try {
    return appendCompact(output, true);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new MarshalerError(typeName, error);
    throw error;
  }
}

/** indent.go `appendCompact`. */
export function appendCompact(src: Uint8Array, escape: boolean): Buffer {
  const out: Buffer[] = [];
  const scan = new StringScanner();
  let start = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (escape && (c === 0x3c || c === 0x3e || c === 0x26)) {
      out.push(Buffer.from(src.subarray(start, i)), bytesOf(`\\u00${HEX[c >> 4]}${HEX[c & 0xf]}`));
      start = i + 1;
    }
    // Convert U+2028 and U+2029 (E2 80 A8 and E2 80 A9).
    if (escape && c === 0xe2 && i + 2 < src.length && src[i + 1] === 0x80 && (src[i + 2]! & ~1) === 0xa8) {
      out.push(Buffer.from(src.subarray(start, i)), bytesOf(`\\u202${HEX[src[i + 2]! & 0xf]}`));
      start = i + 3;
    }
    const v = scan.step(c);
    if (v >= SCAN_SKIP_SPACE) {
      if (v === SCAN_ERROR) break;
      out.push(Buffer.from(src.subarray(start, i)));
      start = i + 1;
    }
  }
  if (scan.eof() === SCAN_ERROR) throw scan.err!;
  out.push(Buffer.from(src.subarray(start)));
  return Buffer.concat(out);
}

// scanner.go's step results, in its order: only the comparisons below depend on it.
const SCAN_CONTINUE = 0;
const SCAN_BEGIN_LITERAL = 1;
const SCAN_SKIP_SPACE = 9;
const SCAN_END = 10;
const SCAN_ERROR = 11;

/** scanner.go `isSpace`. */
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/**
 * scanner.go's state machine for a top-level JSON string with surrounding space: what a
 * `%q` MarshalJSON produces. A value that begins with anything else (object, array,
 * number, literal) is not ported and throws rather than being judged.
 */
class StringScanner {
  err: JsonSyntaxError | null = null;
  private endTop = false;
  private state: (c: number) => number = (c) => this.beginValue(c);

  // appendCompact never counts bytes (scan.bytes), so its errors carry offset 0.
  step(c: number): number {
    return this.state(c);
  }

  /** scanner.go `eof`. */
  eof(): number {
    if (this.err) return SCAN_ERROR;
    if (this.endTop) return SCAN_END;
    this.state(0x20);
    if (this.endTop) return SCAN_END;
    this.err ??= new JsonSyntaxError('unexpected end of JSON input', 0);
    return SCAN_ERROR;
  }

  /** scanner.go `stateBeginValue`, its string and space cases. */
  private beginValue(c: number): number {
    if (isSpace(c)) return SCAN_SKIP_SPACE;
    if (c === 0x22) {
      this.state = (next) => this.inString(next);
      return SCAN_BEGIN_LITERAL;
    }
    throw new Error(`go-json port: a Marshaler output beginning with ${JSON.stringify(String.fromCharCode(c))} is not ported (only strings are)`);
  }

  /** scanner.go `stateInString`. */
  private inString(c: number): number {
    if (c === 0x22) {
      this.state = (next) => this.endValue(next);
      return SCAN_CONTINUE;
    }
    if (c === 0x5c) {
      this.state = (next) => this.inStringEsc(next);
      return SCAN_CONTINUE;
    }
    if (c < 0x20) return this.error(c, 'in string literal');
    return SCAN_CONTINUE;
  }

  /** scanner.go `stateInStringEsc`: only JSON's escapes; Go's `\x`, `\a`, `\v`, `\U` are errors. */
  private inStringEsc(c: number): number {
    if ([0x62, 0x66, 0x6e, 0x72, 0x74, 0x5c, 0x2f, 0x22].includes(c)) {
      this.state = (next) => this.inString(next);
      return SCAN_CONTINUE;
    }
    if (c === 0x75) {
      this.state = (next) => this.inStringEscU(next, 4);
      return SCAN_CONTINUE;
    }
    return this.error(c, 'in string escape code');
  }

  /** scanner.go `stateInStringEscU`, `…U1`, `…U12`, `…U123`: four hex digits. */
  private inStringEscU(c: number, left: number): number {
    if (!isHex(c)) return this.error(c, 'in \\u hexadecimal character escape');
    this.state = left > 1 ? (next) => this.inStringEscU(next, left - 1) : (next) => this.inString(next);
    return SCAN_CONTINUE;
  }

  /** scanner.go `stateEndValue` with an empty parse stack: the top-level value is done. */
  private endValue(c: number): number {
    this.state = (next) => this.endTopState(next);
    this.endTop = true;
    return this.endTopState(c);
  }

  /** scanner.go `stateEndTop`: only space may follow; anything else is an error on the next call. */
  private endTopState(c: number): number {
    if (!isSpace(c)) this.error(c, 'after top-level value');
    return SCAN_END;
  }

  /** scanner.go `error`; the message quotes the byte as quoteChar does. */
  private error(c: number, context: string): number {
    this.state = () => SCAN_ERROR;
    this.err = new JsonSyntaxError(`invalid character ${quoteChar(c)} ${context}`, 0);
    return SCAN_ERROR;
  }
}

/** scanner.go `quoteChar`: the byte as a rune, through strconv.Quote, in single quotes. */
function quoteChar(c: number): string {
  if (c === 0x27) return `'\\''`;
  if (c === 0x22) return `'"'`;
  const quoted = quote(encodeRune(c)).toString('utf8');
  return `'${quoted.slice(1, -1)}'`;
}
