import type { ValidationIssue } from './errors.js';

/**
 * What a secret env entry must fit so that Nomad can hand it to the container unchanged
 * (docs/nomad.md, "Secrets"). Applied whatever the driver, so an agent deployable on one
 * driver is deployable on the other:
 *
 * - Every secret of an agent travels in one Nomad Variable, at most 64 KiB of names and
 *   values (nomad/structs/variables.go, `VariableDecrypted.Validate`). The model key
 *   (api_key: at most 4,096 characters, so at most 16 KiB in UTF-8) rides in it too, which
 *   leaves deploy.env's secrets 40 KiB.
 * - Each secret becomes one line `KEY=<json.Marshal(value)>` of the env file, which Nomad
 *   reads with go-envparse v0.1.0 over a bufio.Scanner: a line of 64 KiB or more is
 *   "token too long" and the task never starts (bufio/scan.go, `MaxScanTokenSize`).
 *   JSON escaping can make a line six times longer than its value (`<` → `\u003c`).
 */
export const SECRET_ENV_MAX_BYTES = 40 * 1024;
/** The longest line go-envparse's scanner reads: with its newline it must fit 64 KiB. */
export const ENV_FILE_MAX_LINE_BYTES = 64 * 1024 - 1;

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * Bytes of `KEY=<value as Go's json.Marshal writes it>`, by golang/go
 * src/encoding/json/encode.go `appendString` with escapeHTML: `\b \f \n \r \t " \` take 2
 * bytes, other bytes below 0x20 and `< > &` take 6 (`\u00XX`), U+2028 and U+2029 take 6,
 * everything else its UTF-8 bytes. A lone surrogate reaches Nomad as U+FFFD (3 bytes).
 */
export function envFileLineBytes(key: string, value: string): number {
  let bytes = utf8Bytes(key) + '="'.length + '"'.length;
  for (const char of value) {
    const code = char.codePointAt(0)!;
    if (code < 0x20) bytes += [0x08, 0x0c, 0x0a, 0x0d, 0x09].includes(code) ? 2 : 6;
    else if (code === 0x22 || code === 0x5c) bytes += 2;
    else if (code === 0x3c || code === 0x3e || code === 0x26 || code === 0x2028 || code === 0x2029) bytes += 6;
    else if (code >= 0xd800 && code <= 0xdfff) bytes += 3;
    else bytes += utf8Bytes(char);
  }
  return bytes;
}

interface SecretEntry {
  key: string;
  value: string;
  secret?: boolean | undefined;
}

/** The issues of deploy.env's secret entries, located as `at` builds paths. */
export function secretEnvIssues(env: readonly SecretEntry[], at: (...path: (string | number)[]) => (string | number)[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  let total = 0;
  env.forEach((entry, index) => {
    if (!entry.secret) return;
    total += utf8Bytes(entry.key) + utf8Bytes(entry.value);
    const line = envFileLineBytes(entry.key, entry.value);
    if (line > ENV_FILE_MAX_LINE_BYTES) {
      issues.push({
        loc: at('env', index, 'value'),
        msg: `a secret value is delivered JSON-escaped as one line of Nomad's env file, at most ${ENV_FILE_MAX_LINE_BYTES} bytes; ${entry.key} needs ${line}`,
        type: 'value_error',
      });
    }
  });
  if (total > SECRET_ENV_MAX_BYTES) {
    issues.push({
      loc: at('env'),
      msg: `secret entries may hold at most ${SECRET_ENV_MAX_BYTES} bytes of names and values together (one 64 KiB Nomad Variable, shared with the model key); these hold ${total}`,
      type: 'value_error',
    });
  }
  return issues;
}
