import assert from 'node:assert/strict';
import { loadConfig } from '../control/config/config.js';
import { documentServerUrl } from '../control/http/routes/openapi.js';
import { ConfigError } from '../contract/settings-reader.js';

describe('PUBLIC_API_URL: the OpenAPI document\'s server URL', () => {
  const base = {
    DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
    CONTROL_HOST: '10.0.3.17',
    CONTROL_PORT: '25431',
  };
  const refused = (env: Record<string, string>) => {
    try {
      loadConfig({ ...base, ...env });
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.problems;
    }
    return assert.fail('accepted');
  };

  it('is a relative /v1 when unset or empty, never the bind address', () => {
    assert.equal(documentServerUrl(loadConfig(base).publicApiUrl), '/v1');
    assert.equal(documentServerUrl(loadConfig({ ...base, PUBLIC_API_URL: '' }).publicApiUrl), '/v1');
  });

  it('is PUBLIC_API_URL with /v1 when set, a trailing slash dropped', () => {
    assert.equal(documentServerUrl(loadConfig({ ...base, PUBLIC_API_URL: 'https://api.example.com/' }).publicApiUrl), 'https://api.example.com/v1');
    assert.equal(documentServerUrl(loadConfig({ ...base, PUBLIC_API_URL: 'http://platform.internal:8443/control' }).publicApiUrl), 'http://platform.internal:8443/control/v1');
  });

  it('refuses what clients could not append /v1/… to', () => {
    assert.deepEqual(refused({ PUBLIC_API_URL: 'ftp://api.example.com' }), ['PUBLIC_API_URL: expected a https: or http:// URL, got ftp://']);
    assert.deepEqual(refused({ PUBLIC_API_URL: 'api.example.com' }), ['PUBLIC_API_URL: not a valid URL']);
    assert.deepEqual(refused({ PUBLIC_API_URL: 'https://api.example.com/v1' }), ['PUBLIC_API_URL: the URL without /v1, such as https://api.example.com (the document adds /v1)']);
    assert.deepEqual(refused({ PUBLIC_API_URL: 'https://api.example.com/?x=1' }), ['PUBLIC_API_URL: a URL without credentials, query or fragment (clients append /v1/… to it)']);
  });
});
