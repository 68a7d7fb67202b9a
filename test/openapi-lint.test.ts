import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';

const ROOT = resolve(import.meta.dirname, '..');
const REDOCLY = join(ROOT, 'node_modules', '.bin', 'redocly');

/** The served document passes Redocly's recommended rules (redocly.yaml) with no error; warnings are printed, not failed. */
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

  it('has no errors under the recommended rules', async () => {
    const response = await control.request('GET', '/openapi.json');
    expectStatus(response, 200);
    const file = join(workDir, 'openapi.json');
    writeFileSync(file, JSON.stringify(response.body, null, 2));
    const lint = spawnSync(REDOCLY, ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.equal(lint.error, undefined, `redocly did not run: ${lint.error?.message}`);
    const report = JSON.parse(lint.stdout.slice(lint.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: Problem[] };
    const describe = (problems: Problem[]) => problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`).join('\n');
    const warnings = report.problems.filter((p) => p.severity === 'warn');
    if (warnings.length > 0) console.log(`      redocly warnings (${warnings.length}):\n${describe(warnings)}`);
    assert.equal(report.totals.errors, 0, describe(report.problems.filter((p) => p.severity === 'error')));
    assert.equal(lint.status, 0, lint.stderr);
  });
});

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}
