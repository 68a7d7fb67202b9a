import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';

describe('control API: body rules', () => {
  let control: TestControl;
  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  it('refuses a body declared as something other than JSON with 415', async () => {
    const { token } = await control.signUp();
    const response = await control.request('POST', '/agents', { token, rawBody: '{"name":"x"}', headers: { 'content-type': 'text/plain' } });
    assert.equal(response.status, 415);
    assert.equal(response.body.code, 'UNSUPPORTED_MEDIA_TYPE');
    const jsonish = await control.request('POST', '/agents', { token, rawBody: '{"name":"x"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
    assert.equal(jsonish.status, 201);
  });

  it('limits metadata keys to 64 characters', async () => {
    const { token } = await control.signUp();
    const long = await control.request('POST', '/agents', { token, body: { name: 'x', metadata: { ['k'.repeat(65)]: 'v' } } });
    assert.equal(long.status, 422);
    assert.equal(long.body.details.errors[0].loc[1], 'metadata');
    const atLimit = await control.request('POST', '/agents', { token, body: { name: 'x', metadata: { ['k'.repeat(64)]: 'v' } } });
    assert.equal(atLimit.status, 201);
  });

  it('documents itself in the OpenAPI document', async () => {
    const document = await control.request('GET', '/openapi.json');
    assert.ok(document.body.paths['/openapi.json']?.get);
    assert.ok(document.body.paths['/agents/{id}/scale']?.post);
    assert.ok(document.body.paths['/agents/{id}/logs/stream']?.get);
  });
});
