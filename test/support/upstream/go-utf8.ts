/**
 * Go's unicode/utf8 decoding, which every other port here steps through byte by byte: Go
 * strings are bytes, and what an invalid byte turns into (U+FFFD, `\x..`, an error)
 * differs per package. Ported from golang/go src/unicode/utf8/utf8.go.
 */

export const RUNE_ERROR = 0xfffd;
export const RUNE_SELF = 0x80;
export const MAX_RUNE = 0x10ffff;

/**
 * utf8.go `DecodeRune`: the rune at `at` and its width; any invalid or short sequence is
 * (RuneError, 1). The lead byte fixes the length and, through `acceptRanges`, the range of
 * the second byte (no overlong forms, no surrogates, nothing past U+10FFFF).
 */
export function decodeRune(p: Uint8Array, at: number): [rune: number, size: number] {
  const n = p.length - at;
  if (n < 1) return [RUNE_ERROR, 0];
  const p0 = p[at]!;
  if (p0 < RUNE_SELF) return [p0, 1];
  let size: number;
  let rune: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (p0 >= 0xc2 && p0 <= 0xdf) {
    size = 2;
    rune = p0 & 0x1f;
  } else if (p0 >= 0xe0 && p0 <= 0xef) {
    size = 3;
    rune = p0 & 0x0f;
    if (p0 === 0xe0) lo = 0xa0; // acceptRanges[1]: no overlong 3-byte form
    if (p0 === 0xed) hi = 0x9f; // acceptRanges[2]: no surrogate halves
  } else if (p0 >= 0xf0 && p0 <= 0xf4) {
    size = 4;
    rune = p0 & 0x07;
    if (p0 === 0xf0) lo = 0x90; // acceptRanges[3]: no overlong 4-byte form
    if (p0 === 0xf4) hi = 0x8f; // acceptRanges[4]: nothing past U+10FFFF
  } else {
    return [RUNE_ERROR, 1];
  }
  if (n < size) return [RUNE_ERROR, 1];
  const p1 = p[at + 1]!;
  if (p1 < lo || hi < p1) return [RUNE_ERROR, 1];
  rune = (rune << 6) | (p1 & 0x3f);
  for (let k = 2; k < size; k++) {
    const b = p[at + k]!;
    if (b < 0x80 || b > 0xbf) return [RUNE_ERROR, 1];
    rune = (rune << 6) | (b & 0x3f);
  }
  return [rune, size];
}

/** utf8.go `ValidRune`: in range and not a surrogate half. */
export const validRune = (rune: number) => (rune >= 0 && rune < 0xd800) || (rune > 0xdfff && rune <= MAX_RUNE);

/** utf8.go `EncodeRune`: an invalid rune is written as RuneError. */
export const encodeRune = (rune: number): Buffer => Buffer.from(String.fromCodePoint(validRune(rune) ? rune : RUNE_ERROR), 'utf8');

/**
 * The bytes Nomad holds for a string our client sent it in JSON: command/agent/http.go
 * `decodeBody` uses encoding/json, whose decode.go `unquoteBytes` turns a lone surrogate
 * escape into U+FFFD, as Buffer.from does with a lone surrogate.
 */
export const goBytes = (text: string): Buffer => Buffer.from(text, 'utf8');

/** Bytes as a JS string, refusing bytes that are not UTF-8 (a JS string could not hold them unchanged). */
export function goString(bytes: Uint8Array): string {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
}
