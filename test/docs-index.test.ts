import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const DOCS = resolve(import.meta.dirname, '..', 'docs');

/** Every file of docs/ and its folders, as docs/README.md links it (`operations/metrics.md`). */
function pages(folder = ''): string[] {
  return readdirSync(resolve(DOCS, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = folder ? `${folder}/${entry.name}` : entry.name;
    return entry.isDirectory() ? pages(path) : [path];
  });
}

describe('docs/README.md', () => {
  const index = readFileSync(resolve(DOCS, 'README.md'), 'utf8');
  const linked = new Set([...index.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)].map((match) => match[1]!));

  it('links every page of docs/ and its folders', () => {
    const missing = pages().filter((page) => page !== 'README.md' && (page.endsWith('.md') || page.startsWith('operations/')) && !linked.has(page));
    assert.deepEqual(missing, [], 'pages missing from docs/README.md: add one line for each');
  });

  it('links nothing that is not there', () => {
    const present = new Set([...pages(), 'console/', '../README.md']);
    assert.deepEqual([...linked].filter((target) => !present.has(target)), []);
  });
});
