import { notFound, validationError, type ValidationIssue } from '../domain/errors.js';

/**
 * Text Postgres cannot hold, refused before any SQL runs. Postgres rejects U+0000 in
 * `text` ("invalid byte sequence for encoding UTF8: 0x00") and in `jsonb` ("unsupported
 * Unicode escape sequence"), and rejects a `\ud800` escape without its pair in `jsonb`;
 * into `text`, node-postgres would silently write U+FFFD for an unpaired surrogate
 * (Buffer.from(string, 'utf8') replaces it). Neither is Unicode text a client meant to send.
 */
const NUL = /\u0000/;
// With the `u` flag a surrogate pair is one code point, so only a lone half matches.
const UNPAIRED_SURROGATE = /[\uD800-\uDFFF]/u;

function problemOf(text: string): Omit<ValidationIssue, 'loc'> | undefined {
  if (NUL.test(text)) return { msg: 'contains a NUL character (U+0000), which cannot be stored', type: 'value_error.nul_character' };
  if (UNPAIRED_SURROGATE.test(text)) return { msg: 'contains an unpaired UTF-16 surrogate, which is not Unicode text', type: 'value_error.unpaired_surrogate' };
  return undefined;
}

interface Visit {
  node: unknown;
  key: string | number;
  parent: Visit | undefined;
}

/** The location of a visited node, built only for a node that has a problem. */
function locationOf(visit: Visit): (string | number)[] {
  const loc: (string | number)[] = [];
  for (let at: Visit | undefined = visit; at; at = at.parent) loc.unshift(at.key);
  return loc;
}

/** Enough to fix a request; a 1 MiB array of bad strings would otherwise make a 10 MB answer. */
const MAX_ISSUES = 50;

/**
 * The strings of a parsed body or query, object keys included, that Postgres could not
 * store (the first MAX_ISSUES), each at its location. Walks with an explicit stack and
 * parent links: a 1 MiB body can nest deeper than the call stack goes, and copying each
 * path would be quadratic.
 */
export function unstorableText(value: unknown, where: 'body' | 'query'): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const pending: Visit[] = [{ node: value, key: where, parent: undefined }];
  while (pending.length > 0 && issues.length < MAX_ISSUES) {
    const visit = pending.pop()!;
    const { node } = visit;
    if (typeof node === 'string') {
      const problem = problemOf(node);
      if (problem) issues.push({ loc: locationOf(visit), ...problem });
    } else if (Array.isArray(node)) {
      node.forEach((item, index) => pending.push({ node: item, key: index, parent: visit }));
    } else if (node !== null && typeof node === 'object') {
      for (const [key, item] of Object.entries(node)) {
        const child = { node: item, key, parent: visit };
        const problem = problemOf(key);
        if (problem) issues.push({ loc: locationOf(child), ...problem, msg: `its name ${problem.msg}` });
        pending.push(child);
      }
    }
  }
  return issues;
}

/** Throws VALIDATION_ERROR naming each field whose text cannot be stored. */
export function assertStorable(value: unknown, where: 'body' | 'query'): void {
  const issues = unstorableText(value, where);
  if (issues.length > 0) throw validationError(issues);
}

/** A path id whose text cannot be stored names nothing that exists: NOT_FOUND, as for any unknown id. */
export function assertStorableParams(params: Record<string, string>): void {
  if (Object.values(params).some((value) => problemOf(value) !== undefined)) throw notFound('Resource');
}
