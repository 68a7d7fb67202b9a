import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Type } from '@sinclair/typebox';
import { PlatformError } from '../control/domain/errors.js';
import { createApp } from '../control/http/app.js';
import { buildOpenApi } from '../control/http/openapi.js';
import { defineRoute, type RouteSpec } from '../control/http/route.js';
import { createLogger } from '../control/config/logger.js';
import { OpenApiChecker } from './support/openapi-checker.js';

const Thing = Type.Object({ name: Type.String() }, { additionalProperties: false });

/**
 * Routes whose handlers break their own documentation on purpose (a status, a header, a
 * body it does not declare), served by the real app and held to the document it builds.
 */
const routes: RouteSpec[] = [
  defineRoute({ method: 'get', path: '/things/:id', summary: 'A thing', description: 'A thing', operationId: 'plantedRoute1', tag: 'Meta', auth: 'any', responses: { 200: { description: 'The thing', schema: Thing } },
    handler: async ({ params }) => ({ status: 200, body: { name: params.id } }) }),
  defineRoute({ method: 'get', path: '/planted/status', summary: 'Answers 202, documents 200 only', description: 'Answers 202, documents 200 only', operationId: 'plantedRoute2', tag: 'Meta', auth: 'none', responses: { 200: { description: 'OK', schema: Thing } },
    handler: async () => ({ status: 202, body: { name: 'accepted' } }) }),
  defineRoute({ method: 'get', path: '/planted/header', summary: 'Sends an ETag it does not declare', description: 'Sends an ETag it does not declare', operationId: 'plantedRoute3', tag: 'Meta', auth: 'none', responses: { 200: { description: 'OK', schema: Thing } },
    handler: async () => ({ status: 200, body: { name: 'tagged' }, headers: { ETag: '"1"' } }) }),
  defineRoute({ method: 'get', path: '/planted/body', summary: 'Sends a body its schema refuses', description: 'Sends a body its schema refuses', operationId: 'plantedRoute4', tag: 'Meta', auth: 'none', responses: { 200: { description: 'OK', schema: Thing } },
    handler: async () => ({ status: 200, body: { name: 7 } }) }),
  defineRoute({ method: 'get', path: '/planted/conflict', summary: 'Throws a 409 it does not declare', description: 'Throws a 409 it does not declare', operationId: 'plantedRoute5', tag: 'Meta', auth: 'none', responses: { 200: { description: 'OK', schema: Thing } },
    handler: async () => { throw new PlatformError('EMAIL_ALREADY_REGISTERED'); } }),
];

describe('OpenAPI response checker', () => {
  let server: Server;
  let baseUrl: string;
  let checker: OpenApiChecker;

  before(async () => {
    const app = createApp({
      routes,
      authenticate: async ({ authorization }) => {
        if (authorization !== 'Bearer good') throw new PlatformError('AUTHENTICATION_FAILED');
        return { userId: 'u', email: 'u@example.com', accountId: 'a', role: 'owner', via: 'session' };
      },
      checkReadiness: async () => ({ ready: true, dependencies: {} }),
      logger: createLogger('silent'),
      trustProxy: false,
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    checker = new OpenApiChecker(buildOpenApi(routes, [], { serverUrl: baseUrl, version: '0.0.0' }));
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  const exchange = async (method: string, path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(baseUrl + path, { method, headers });
    return { method, path, status: response.status, headers: response.headers, text: await response.text() };
  };
  const refusal = async (method: string, path: string, headers: Record<string, string> = {}) => {
    const seen = await exchange(method, path, headers);
    assert.throws(() => checker.check(seen), Error, `${method} ${path} ${seen.status} passed`);
    return checker.problems(seen).join('\n');
  };

  it('passes documented answers: 200 with its body, 401 with WWW-Authenticate, 422, 405 with Allow, 404 for an unknown path', async () => {
    const seen = [
      await exchange('GET', '/things/t1', { authorization: 'Bearer good' }),
      await exchange('GET', '/things/t1'),
      await exchange('GET', '/things/t1?x=%00', { authorization: 'Bearer good' }),
      await exchange('DELETE', '/things/t1'),
      await exchange('GET', '/nothing/here'),
    ];
    assert.deepEqual(seen.map((s) => s.status), [200, 401, 422, 405, 404]);
    assert.ok(seen[1]!.headers.get('www-authenticate'), 'the 401 carries WWW-Authenticate');
    for (const s of seen) checker.check(s);
  });

  it('refuses a status the operation does not declare', async () => {
    assert.match(await refusal('GET', '/planted/status'), /status 202 is not declared for GET \/planted\/status \(declared: 200, 405, 422, default\)/);
    assert.match(await refusal('GET', '/planted/conflict'), /status 409 is not declared/);
  });

  it('refuses a header the response does not declare', async () => {
    assert.match(await refusal('GET', '/planted/header'), /header ETag is sent but not declared at #\/paths\/~1planted~1header\/get\/responses\/200/);
  });

  it('refuses a body that does not match the declared schema', async () => {
    assert.match(await refusal('GET', '/planted/body'), /the body does not match .*body\/name must be string/);
  });

  it('refuses another status for a path or method the document lacks', () => {
    const headers = new Headers({ 'content-type': 'application/json' });
    const text = JSON.stringify({ code: 'X', message: 'x', details: {} });
    assert.match(checker.problems({ method: 'GET', path: '/nothing', status: 200, headers, text }).join(), /no path of the document matches \/nothing/);
    assert.match(checker.problems({ method: 'PUT', path: '/things/t1', status: 200, headers, text }).join(), /has no PUT operation, so only 405/);
  });
});
