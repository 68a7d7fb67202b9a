import { quote, quoteRune } from './go-strconv-quote.js';
import { decodeRune, encodeRune, goString, RUNE_ERROR, RUNE_SELF } from './go-utf8.js';

/**
 * hashicorp/go-envparse v0.1.0, the version Nomad's go.mod pins, as Nomad reads a template
 * rendered with `env = true` (client/allocrunner/taskrunner/template/template.go
 * `loadTemplateEnv` → `envparse.Parse`). Ported from envparse.go at tag v0.1.0 (commit
 * 0afbb1e), with Go's bufio.Scanner (src/bufio/scan.go) and bytes.TrimSpace underneath.
 *
 * v0.1.0 has no `Parser`/`Next`: those came later on main (895064c, "implement order
 * preserving apis"), and main's `Next` skips a pair whose value is empty. v0.1.0's `Parse`
 * keeps it: `if len(k) > 0 { env[k] = v }`.
 */

export class EnvParseError extends Error {
  constructor(readonly line: number, override readonly cause: Error) {
    // envparse.go `ParseError.Error`.
    super(line > 0 ? `error on line ${line}: ${cause.message}` : `error reading: ${cause.message}`);
    this.name = 'EnvParseError';
  }
}

/** bufio/scan.go `MaxScanTokenSize`: Parse never calls Scanner.Buffer, so this is the limit. */
export const MAX_SCAN_TOKEN_SIZE = 64 * 1024;
const START_BUF_SIZE = 4096;

/** envparse.go `Parse`: the env file's bytes as Nomad reads them, or an EnvParseError. */
export function parseEnvFile(input: Uint8Array): Map<string, string> {
  const env = new Map<string, string>();
  const scanner = new LineScanner(input);
  let line = 0;
  while (scanner.scan()) {
    line++;
    let pair: [Buffer, Buffer];
    try {
      pair = parseLine(scanner.token!);
    } catch (error) {
      throw new EnvParseError(line, error as Error);
    }
    const [key, value] = pair;
    // Skip blank lines (and comments): an empty value is kept.
    if (key.length > 0) env.set(goString(key), goString(value));
  }
  if (scanner.err) throw new EnvParseError(line, scanner.err);
  return env;
}

/**
 * bufio/scan.go `Scanner.Scan` with `ScanLines`, reading from an os.File (Read fills what
 * it can, then answers 0, io.EOF). A line that does not fit the 64 KiB buffer with its
 * newline is ErrTooLong: so any line of 65,536 bytes or more.
 */
class LineScanner {
  token: Buffer | null = null;
  err: Error | null = null;
  private eof = false;
  private buf = Buffer.alloc(0);
  private start = 0;
  private end = 0;
  private read = 0;

  constructor(private readonly input: Uint8Array) {}

  scan(): boolean {
    for (;;) {
      // See if we can get a token with what we already have.
      if (this.end > this.start || this.eof || this.err) {
        const [advance, token] = scanLines(this.buf.subarray(this.start, this.end), this.eof || this.err !== null);
        this.start += advance;
        this.token = token;
        if (token) return true;
      }
      if (this.eof || this.err) {
        this.start = this.end = 0;
        return false;
      }
      // Shift data to the beginning of the buffer if there is lots of empty space or space is needed.
      if (this.start > 0 && (this.end === this.buf.length || this.start > this.buf.length / 2)) {
        this.buf.copy(this.buf, 0, this.start, this.end);
        this.end -= this.start;
        this.start = 0;
      }
      // Is the buffer full? If so, resize (never past maxTokenSize).
      if (this.end === this.buf.length) {
        if (this.buf.length >= MAX_SCAN_TOKEN_SIZE) {
          this.err = new Error('bufio.Scanner: token too long');
          return false;
        }
        const size = Math.min(this.buf.length * 2 || START_BUF_SIZE, MAX_SCAN_TOKEN_SIZE);
        const grown = Buffer.alloc(size);
        this.buf.copy(grown, 0, this.start, this.end);
        this.buf = grown;
        this.end -= this.start;
        this.start = 0;
      }
      const n = Math.min(this.buf.length - this.end, this.input.length - this.read);
      if (n === 0) {
        this.eof = true;
        continue;
      }
      this.buf.set(this.input.subarray(this.read, this.read + n), this.end);
      this.read += n;
      this.end += n;
    }
  }
}

/** bufio/scan.go `ScanLines` (with `dropCR`): `\r?\n`-terminated lines; the last may lack the newline. */
function scanLines(data: Buffer, atEOF: boolean): [advance: number, token: Buffer | null] {
  if (atEOF && data.length === 0) return [0, null];
  const dropCR = (line: Buffer) => (line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, -1) : line);
  const newline = data.indexOf(0x0a);
  if (newline >= 0) return [newline + 1, dropCR(data.subarray(0, newline))];
  if (atEOF) return [data.length, dropCR(data)];
  return [0, null];
}

/** unicode/graphic.go `IsSpace`: Latin-1 spaces, then the White_Space property. */
function isSpace(rune: number): boolean {
  if (rune <= 0xff) return [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0].includes(rune);
  return rune === 0x1680 || (rune >= 0x2000 && rune <= 0x200a) || [0x2028, 0x2029, 0x202f, 0x205f, 0x3000].includes(rune);
}

/** utf8.go `DecodeLastRune`. */
function decodeLastRune(p: Buffer, end: number): [rune: number, size: number] {
  let start = end - 1;
  if (p[start]! < RUNE_SELF) return [p[start]!, 1];
  const limit = Math.max(end - 4, 0);
  for (start--; start >= limit; start--) if ((p[start]! & 0xc0) !== 0x80) break; // RuneStart
  if (start < 0) start = 0;
  const [rune, size] = decodeRune(p.subarray(0, end), start);
  return start + size !== end ? [RUNE_ERROR, 1] : [rune, size];
}

/** bytes.go `TrimSpace`: unicode.IsSpace from both ends; an invalid byte stops it. */
function trimSpace(s: Buffer): Buffer {
  let start = 0;
  while (start < s.length) {
    const [rune, size] = decodeRune(s, start);
    if (!isSpace(rune)) break;
    start += size;
  }
  let end = s.length;
  while (end > start) {
    const [rune, size] = decodeLastRune(s, end);
    if (!isSpace(rune)) break;
    end -= size;
  }
  return s.subarray(start, end);
}

const EXPORT_PREFIX = Buffer.from('export ');
const isLetter = (b: number) => (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a);
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const fail = (message: string) => new Error(message);

enum Mode {
  Normal,
  DoubleQuote,
  SingleQuote,
  Escape,
}

/** envparse.go `parseLine`: a line's key and value; a blank or comment line is two empty slices. */
export function parseLine(line: Buffer): [Buffer, Buffer] {
  const empty = Buffer.alloc(0);
  const ln = trimSpace(line);
  if (ln.length === 0 || ln[0] === 0x23) return [empty, empty];

  const separator = ln.indexOf(0x3d);
  if (separator < 0) throw fail('missing =');
  let key = trimSpace(ln.subarray(0, separator));
  const value = trimSpace(ln.subarray(separator + 1));

  // An "export " prefix is dropped only if a key name follows it.
  if (key.length > EXPORT_PREFIX.length && key.subarray(0, EXPORT_PREFIX.length).equals(EXPORT_PREFIX)) key = key.subarray(EXPORT_PREFIX.length);
  if (key.length === 0) throw fail('empty key');
  // The three comparisons of parseLine: below 'A', between 'Z' and 'a' but '_', above 'z'.
  const first = key[0]!;
  if (first < 0x41 || (first > 0x5a && first < 0x61 && first !== 0x5f) || first > 0x7a) {
    throw fail(`key must start with [A-Za-z_] but found ${quoteRune(first)}`);
  }
  for (const b of key.subarray(1)) {
    if (!(b === 0x5f || b === 0x2e || b === 0x2f || isLetter(b) || isDigit(b))) throw fail(`key characters must be [A-Za-z0-9/_.] but found ${quoteRune(b)}`);
  }

  // Empty values are ok! Shortcircuit.
  if (value.length === 0) return [key, value];

  const out = Buffer.alloc(value.length);
  let n = 0;
  // The last significant character, for trimming unquoted space before a trailing comment.
  let lastSig = 0;
  let mode = Mode.Normal;
  for (let i = 0; i < value.length; i++) {
    const v = value[i]!;
    // Control characters are always an error, quoted or not (a raw tab too).
    if (v < 32) throw fail(`0x${v.toString(16).padStart(2, '0')} is an invalid value character`);
    // High bit set: part of a multibyte character, passed through. lastSig is set before
    // the increment, as in the source.
    if (v > 127) {
      if (mode === Mode.Escape) throw fail('multibyte characters disallowed in escape sequences');
      lastSig = n;
      out[n++] = v;
      continue;
    }
    switch (mode) {
      case Mode.Normal:
        if (v === 0x22) mode = Mode.DoubleQuote;
        else if (v === 0x27) mode = Mode.SingleQuote;
        else if (v === 0x23) return [key, out.subarray(0, lastSig)]; // a comment: nothing left to parse
        else if (v === 0x20 || v === 0x09) out[n++] = v; // whitespace is not tracked
        else {
          out[n++] = v;
          lastSig = n;
        }
        break;
      case Mode.DoubleQuote:
        if (v === 0x22) mode = Mode.Normal;
        else if (v === 0x5c) mode = Mode.Escape;
        else {
          out[n++] = v;
          lastSig = n;
        }
        break;
      case Mode.Escape: {
        // In double quotes after a backslash: JSON's escapes, \u with surrogate pairs.
        const simple: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x72: 0x0d, 0x6e: 0x0a, 0x74: 0x09 };
        if (v in simple) {
          out[n++] = simple[v]!;
        } else if (v === 0x75) {
          let rune = hexToRune(value.subarray(i + 1));
          i += 4;
          if (rune >= 0xd800 && rune < 0xe000) {
            // utf16.IsSurrogate: the next six bytes must be another \uXXXX.
            if (value.length < i + 6) throw fail('incomplete Unicode surrogate pair');
            if (value[i + 1] !== 0x5c || value[i + 2] !== 0x75) throw fail('incomplete Unicode surrogate pair');
            const low = hexToRune(value.subarray(i + 3));
            i += 6;
            // utf16.DecodeRune: a high then a low half, else U+FFFD.
            rune = rune < 0xdc00 && low >= 0xdc00 && low < 0xe000 ? ((rune - 0xd800) << 10) + (low - 0xdc00) + 0x10000 : RUNE_ERROR;
          }
          const encoded = encodeRune(rune);
          encoded.copy(out, n);
          n += encoded.length;
        } else {
          throw fail(`invalid escape sequence: ${quote(encodeRune(v)).toString('utf8')}`);
        }
        lastSig = n;
        mode = Mode.DoubleQuote;
        break;
      }
      case Mode.SingleQuote:
        if (v === 0x27) mode = Mode.Normal;
        else {
          out[n++] = v;
          lastSig = n;
        }
        break;
    }
  }
  switch (mode) {
    case Mode.Normal:
      return [key, out.subarray(0, n)];
    case Mode.DoubleQuote:
      throw fail('unmatched "');
    case Mode.SingleQuote:
      throw fail("unmatched '");
    case Mode.Escape:
      throw fail('incomplete escape sequence');
  }
}

/** envparse.go `h2r`: four hex digits as a rune. */
function hexToRune(buf: Buffer): number {
  if (buf.length < 4) throw fail('incomplete hex sequence');
  let rune = 0;
  for (let i = 0; i < 4; i++) {
    const d = buf[i]!;
    let digit: number;
    if (d >= 0x30 && d <= 0x39) digit = d - 0x30;
    else if (d >= 0x61 && d <= 0x66) digit = d - 0x61 + 10;
    else if (d >= 0x41 && d <= 0x46) digit = d - 0x41 + 10;
    else throw fail(`invalid hex character: ${quote(encodeRune(d)).toString('utf8')}`);
    rune = rune * 16 + digit;
  }
  return rune;
}
