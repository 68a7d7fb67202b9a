import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';

/** The committed copy clients generate from without running the platform. */
const COMMITTED_COPY = resolve(import.meta.dirname, '..', 'openapi', 'openapi.json');

/** The document as the committed copy holds it: two-space JSON with a final newline. */
const asCommitted = (document: unknown) => `${JSON.stringify(document, null, 2)}\n`;

describe('OpenAPI document: the committed copy', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => {
    await control?.close();
  });

  // `npm run openapi:write` runs this file with OPENAPI_WRITE=1 to rewrite the copy from what the API serves.
  it('openapi/openapi.json is what GET /v1/openapi.json serves', async () => {
    const response = await control.request('GET', '/openapi.json');
    expectStatus(response, 200);
    const served = asCommitted(response.body);
    if (process.env.OPENAPI_WRITE === '1') writeFileSync(COMMITTED_COPY, served);
    let committed = '';
    try {
      committed = readFileSync(COMMITTED_COPY, 'utf8');
    } catch {
      // missing: reported below like any difference
    }
    assert.ok(committed === served, `openapi/openapi.json differs from the document the API serves: run \`npm run openapi:write\` and commit the result${firstDifference(committed, served)}`);
  });
});

/** Where the two texts part, as a line number and both lines, so the message says what changed. */
function firstDifference(committed: string, served: string): string {
  const a = committed.split('\n');
  const b = served.split('\n');
  const line = a.findIndex((text, i) => text !== b[i]);
  const at = line === -1 ? a.length : line;
  return ` (first difference at line ${at + 1}: committed ${JSON.stringify(a[at] ?? '<end>')}, served ${JSON.stringify(b[at] ?? '<end>')})`;
}
