import assert from 'node:assert/strict';
import { describeMemory, MIB, type SiegeReport } from './attacked-authz.js';
import { errorName, type H2Attacker } from './h2-attacker.js';

/**
 * What test/authz-http2-attacks.test.ts holds after each attack, as lists of problems so
 * that a failure names all of them at once: memory and the other connection's Checks
 * (`withstood`), and how the attacker was refused (`goAwayWith`, `goAwayOrCutOff`, `refused`).
 */

const LIMIT_BYTES = 64 * MIB;

/** Memory, Checks and the child's health: what every attack must leave as it found it. Returns the problems found, and prints the figures. */
export function withstood(title: string, report: SiegeReport, attacker: H2Attacker | string): string[] {
  const outcome = typeof attacker === 'string' ? attacker : attacker.describe();
  console.log(`      [${title}] ${describeMemory(report)}; ${report.checks.describe()}; attacker: ${outcome}`);
  const problems: string[] = [];
  if (!report.after) problems.push(`authz could not be measured after the attack: ${report.unresponsive}`);
  const rss = (report.after?.rss ?? report.before.rss) - report.before.rss;
  const heap = (report.after?.heapUsed ?? report.before.heapUsed) - report.before.heapUsed;
  if (rss > LIMIT_BYTES) problems.push(`authz's RSS grew by ${(rss / MIB).toFixed(1)} MiB (limit 64)`);
  if (heap > LIMIT_BYTES) problems.push(`authz's heap grew by ${(heap / MIB).toFixed(1)} MiB (limit 64)`);
  if (report.checks.failures.length > 0) problems.push(`Checks on the other connection failed: ${report.checks.describe()}`);
  if (report.checks.sent < 25) problems.push(`only ${report.checks.sent} Checks were sent during the attack`);
  if (report.uncaught.length > 0) problems.push(`authz threw: ${report.uncaught.join('\n')}`);
  return problems;
}

export function assertNone(problems: string[], report: SiegeReport, attacker: H2Attacker | string): void {
  const outcome = typeof attacker === 'string' ? attacker : attacker.describe();
  assert.ok(problems.length === 0, `${problems.join('\n')}\n  memory: ${describeMemory(report)}\n  Checks: ${report.checks.describe()}\n  attacker: ${outcome}`);
}

/** The connection ended with GOAWAY and `code`. */
export function goAwayWith(attacker: H2Attacker, code: number, why: string): string[] {
  if (attacker.goAway?.code === code) return [];
  return [`expected GOAWAY ${errorName(code)} (${why}), got ${attacker.goAway ? `GOAWAY ${errorName(attacker.goAway.code)}` : 'no GOAWAY'}${attacker.closed ? '' : ', and the connection is still open'}`];
}

/** For a peer that does not read: GOAWAY with `code` behind what it left unread, or the connection cut (nghttp2's and Go's answer: the GOAWAY may never be read). */
export function goAwayOrCutOff(attacker: H2Attacker, code: number, why: string): string[] {
  if (attacker.goAway === undefined && attacker.closedByServer) return [];
  return goAwayWith(attacker, code, why);
}

/**
 * The attacking streams `ids` refused: RST_STREAM with one of `codes`, or a response whose
 * `:status` or `grpc-status` is in `answers`; none served. At least one refused (`every`:
 * each one), unless a GOAWAY with one of `goAwayCodes` ended the connection.
 */
export function refused(attacker: H2Attacker, ids: number[], codes: number[], goAwayCodes: number[], answers: { status?: string[]; grpcStatus?: string[]; every?: boolean } = {}): string[] {
  const problems: string[] = [];
  if (attacker.goAway && !goAwayCodes.includes(attacker.goAway.code)) problems.push(`GOAWAY ${errorName(attacker.goAway.code)}, expected none or ${goAwayCodes.map(errorName).join(' or ')}`);
  const served: number[] = [];
  let refusedCount = 0;
  for (const id of ids) {
    const reset = attacker.resets.get(id);
    const blocks = attacker.responses.get(id) ?? [];
    const answeredAsRefusal = blocks.some((fields) => answers.status?.includes(fields[':status'] ?? '') || answers.grpcStatus?.includes(fields['grpc-status'] ?? ''));
    if (reset !== undefined && !codes.includes(reset) && !answeredAsRefusal) problems.push(`stream ${id} reset with ${errorName(reset)}, expected ${codes.map(errorName).join(' or ')}`);
    if (blocks.length > 0 && !answeredAsRefusal) served.push(id);
    if (answeredAsRefusal || (reset !== undefined && codes.includes(reset))) refusedCount += 1;
  }
  if (served.length > 0) problems.push(`${served.length} attacking streams were served, e.g. stream ${served[0]}: ${JSON.stringify(attacker.responses.get(served[0]!))}`);
  const endedByGoAway = attacker.goAway !== undefined && goAwayCodes.includes(attacker.goAway.code);
  if (refusedCount === 0 && !endedByGoAway) problems.push('no attacking stream was refused, and no GOAWAY came');
  else if (answers.every && refusedCount < ids.length && !endedByGoAway) problems.push(`only ${refusedCount} of the ${ids.length} attacking streams were refused`);
  return problems;
}
