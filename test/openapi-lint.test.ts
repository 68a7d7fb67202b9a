import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';

const ROOT = resolve(import.meta.dirname, '..');
const REDOCLY = join(ROOT, 'node_modules', '.bin', 'redocly');

/** The served document passes Redocly's recommended-strict rules (redocly.yaml) with no problem at all: strict makes every warning an error. */
describe('OpenAPI document: redocly lint', () => {
  let control: TestControl;
  let workDir: string;

  before(async () => {
    control = await startControl();
    workDir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  });
  after(async () => {
    await control?.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('has no problems under the recommended-strict rules', async () => {
    const response = await control.request('GET', '/openapi.json');
    expectStatus(response, 200);
    const file = join(workDir, 'openapi.json');
    writeFileSync(file, JSON.stringify(response.body, null, 2));
    const lint = spawnSync(REDOCLY, ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.equal(lint.error, undefined, `redocly did not run: ${lint.error?.message}`);
    const report = JSON.parse(lint.stdout.slice(lint.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: Problem[] };
    const describe = (problems: Problem[]) => problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`).join('\n');
    assert.equal(report.problems.length, 0, describe(report.problems));
    assert.equal(lint.status, 0, lint.stderr);
  });
});

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}
