/**
 * REDIS_KEY_PREFIX, which the control API and authz both put before every Redis key so
 * that installations (or test suites) can share one Redis. Both sides must be given the
 * same prefix (docs/contract.md, "Edge projection").
 *
 * Letters, digits and `:._-` only: a brace would move the keys' Redis Cluster hash tag
 * (a key's slot comes from its first `{…}`, and the slug's tag must stay the first), and
 * a glob character (`*?[]\`) would change what the usage flusher's SCAN MATCH selects.
 */
const ALLOWED = /^[A-Za-z0-9:._-]*$/;

/** Why `value` cannot be a key prefix, or undefined when it can. */
export function keyPrefixProblem(name: string, value: string): string | undefined {
  if (ALLOWED.test(value)) return undefined;
  return `${name}: letters, digits and : . _ - only (a brace would move the keys' Redis Cluster hash tag, a * ? [ ] \\ would change the usage flusher's SCAN pattern), got "${value}"`;
}
