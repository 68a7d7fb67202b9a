import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';

describe('The API reference page and GET /v1/version', () => {
  let control: TestControl;
  let origin: string;

  before(async () => {
    control = await startControl();
    origin = new URL(control.baseUrl).origin;
  });
  after(async () => {
    await control?.close();
  });

  it('GET /docs is the reference page, built from the document, with every operation', async () => {
    const document = (await control.request('GET', '/openapi.json')).body;
    const response = await fetch(`${origin}/docs`, { headers: { accept: 'text/html' } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    const page = await response.text();
    assert.ok(page.includes('<h3>Roll back an agent</h3>'), 'the summary of rollbackAgent is on the page');
    for (const item of Object.values(document.paths) as Record<string, { operationId: string }>[]) {
      for (const operation of Object.values(item)) assert.ok(page.includes(`id="${operation.operationId}"`), `${operation.operationId} has its section`);
    }
  });

  it('GET /docs loads nothing: no script, no outside address, and a policy that allows neither', async () => {
    const response = await fetch(`${origin}/docs`);
    const page = await response.text();
    assert.doesNotMatch(page, /<script|<link|<img|<iframe|@import|url\(/i);
    // The only absolute URLs are in example values (shown as text), never in src or href.
    assert.doesNotMatch(page, /(src|href)="(https?:)?\/\//i);
    const policy = response.headers.get('content-security-policy') ?? '';
    assert.match(policy, /default-src 'none'/);
    assert.doesNotMatch(policy, /script-src/);
  });

  it('GET /v1/version names the release, the API version and the commit, without a token', async () => {
    const response = await control.request('GET', '/version');
    expectStatus(response, 200);
    assert.match(response.body.version, /^\d+\.\d+\.\d+/);
    assert.equal(response.body.api_version, '1');
    assert.ok(response.body.commit === null || /^[0-9a-f]{40}$/.test(response.body.commit), response.body.commit);
    assert.deepEqual(Object.keys(response.body).sort(), ['api_version', 'commit', 'version']);
  });
});
