import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { recordSettingReads, SettingReader } from '../contract/settings-reader.js';
import { renderConfigurationReference } from '../scripts/lib/configuration-reference.js';

const ROOT = resolve(import.meta.dirname, '..');
const PAGE = resolve(ROOT, 'docs', 'configuration.md');

/**
 * Files that read variables of the environment outside a SettingReader (`env.NAME`,
 * `env['NAME']`): `npm run up`'s wiring and the operator commands' fallbacks. Every name
 * they read must be on the page too.
 */
const RAW_READERS = ['contract/env-file.ts', 'scripts/up.ts', 'scripts/lib/up-authz.ts', 'scripts/lib/up-edge-tls.ts', 'scripts/lib/platform-state.ts', 'control/config/config.ts'];
/** Not ours: `up` looks for envoy on PATH (said on the page, not a setting). */
const NOT_SETTINGS = new Set(['PATH']);

describe('docs/configuration.md', () => {
  it('is what `npm run config:docs` makes of the settings readers', () => {
    const generated = renderConfigurationReference();
    let committed = '';
    try {
      committed = readFileSync(PAGE, 'utf8');
    } catch {
      // missing: reported below like any difference
    }
    assert.ok(committed === generated, `docs/configuration.md is stale: run \`npm run config:docs\` and commit the result${firstDifference(committed, generated)}`);
  });

  it('lists every variable read outside the readers (npm run up, the operator commands)', () => {
    const page = readFileSync(PAGE, 'utf8');
    const missing = RAW_READERS.flatMap((file) => {
      const source = readFileSync(resolve(ROOT, file), 'utf8');
      const names = [...source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)].map((match) => match[1] ?? match[2]!);
      return names.filter((name) => !NOT_SETTINGS.has(name) && !page.includes(`\`${name}\``)).map((name) => `${file}: ${name}`);
    });
    assert.deepEqual([...new Set(missing)], [], 'read from the environment but not on docs/configuration.md: read it through a SettingReader (scripts/lib/up-settings.ts) and describe it');
  });
});

describe('SettingReader: recording reads', () => {
  it('records each read with its default and bounds, and marks what is required', () => {
    const recorded = recordSettingReads(() => {
      const read = new SettingReader({ PORT: '99999' });
      read.port('PORT', 8080);
      read.integer('RETRIES', 3, 0, 10, 'a why');
      read.oneOf('MODE', ['a', 'b'] as const, 'a');
      read.url('DATABASE_URL', ['postgres:']);
      read.throwIfProblems();
    });
    assert.deepEqual(recorded.reads, [
      { name: 'PORT', kind: 'port', fallback: 8080, min: 0, max: 65535 },
      { name: 'RETRIES', kind: 'integer', fallback: 3, min: 0, max: 10, expected: 'a why' },
      { name: 'MODE', kind: 'one of', fallback: 'a', choices: ['a', 'b'] },
      { name: 'DATABASE_URL', kind: 'URL', fallback: undefined, choices: ['postgres://'] },
    ]);
    assert.deepEqual(recorded.problems, ['PORT: expected an integer from 0 to 65535, got "99999"', 'DATABASE_URL: required (a postgres:// URL)']);
  });

  it('records nothing outside recordSettingReads', () => {
    const outside = new SettingReader({});
    outside.string('LOOSE', 'x');
    assert.deepEqual(recordSettingReads(() => undefined).reads, []);
  });
});

/** Where the two texts part, as a line number and both lines. */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n');
  const b = generated.split('\n');
  const line = a.findIndex((text, index) => text !== b[index]);
  const at = line === -1 ? a.length : line;
  return `\n  first difference at line ${at + 1}:\n  committed: ${a[at] ?? '(end of file)'}\n  generated: ${b[at] ?? '(end of file)'}`;
}
