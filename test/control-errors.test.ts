import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus } from './support/control-api.js';

/**
 * Every endpoint the control API serves (docs/contract.md and the OpenAPI document), as `METHOD /path` with `{}` for path
 * parameters; GET /openapi.json, the document itself, need not describe itself.
 */
const SERVED = [
  'GET /auth/registration',
  'POST /auth/register',
  'POST /auth/login',
  'GET /auth/me',
  'POST /api-keys',
  'GET /api-keys',
  'DELETE /api-keys/{}',
  'POST /agents',
  'GET /agents',
  'GET /agents/{}',
  'PATCH /agents/{}',
  'DELETE /agents/{}',
  'POST /agents/{}/deploy',
  'POST /agents/{}/scale',
  'GET /agents/{}/logs',
  'GET /agents/{}/logs/stream',
  'GET /agents/{}/metrics',
  'GET /agents/{}/metrics/stream',
  'POST /agents/{}/access-keys',
  'GET /agents/{}/access-keys',
  'DELETE /agents/{}/access-keys/{}',
  'GET /account/usage',
  'POST /account/subscription',
];

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

describe('control API: errors, OpenAPI document and health', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  describe('error responses', () => {
    it('answers an unknown path with 404 NOT_FOUND as JSON', async () => {
      const { token } = await control.signUp();
      for (const path of ['/nothing-here', '/agents/agt_x/nothing', '/v2/agents']) {
        const response = await control.request('GET', path, { token });
        expectError(response, 404, 'NOT_FOUND');
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      }
      const outside = await fetch(control.baseUrl.replace(/\/v1$/, '') + '/nothing-here');
      assert.equal(outside.status, 404);
      const body = await outside.json();
      assert.equal(body.code, 'NOT_FOUND');
    });

    const wrongMethods = (agentId: string): [string, string, string[]][] => [
      ['PUT', '/agents', ['GET', 'POST']],
      ['PUT', `/agents/${agentId}`, ['GET', 'PATCH', 'DELETE']],
      ['DELETE', '/auth/login', ['POST']],
      ['PATCH', '/account/usage', ['GET']],
    ];

    it('answers a wrong method on a known path with 405 METHOD_NOT_ALLOWED', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      for (const [method, path] of wrongMethods(agent.id)) {
        expectError(await control.request(method, path, { token, body: {} }), 405, 'METHOD_NOT_ALLOWED');
      }
    });

    // RFC 9110 §15.5.6: a 405 response MUST carry Allow with the methods the resource supports.
    it('names the allowed methods of a 405 in an Allow header', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      for (const [method, path, allowed] of wrongMethods(agent.id)) {
        const response = await control.request(method, path, { token, body: {} });
        assert.equal(response.status, 405);
        const allow = (response.headers.get('allow') ?? '').split(',').map((m) => m.trim());
        for (const expected of allowed) assert.ok(allow.includes(expected), `${method} ${path}: Allow is "${response.headers.get('allow') ?? ''}"`);
      }
    });

    it('answers a missing, malformed or unknown token with 401 AUTHENTICATION_FAILED', async () => {
      const cases: (Record<string, string> | undefined)[] = [
        undefined,
        { authorization: '' },
        { authorization: 'Bearer' },
        { authorization: 'Bearer ' },
        { authorization: 'Token abc' },
        { authorization: 'Basic dXNlcjpwYXNz' },
        { authorization: 'Bearer not-a-token' },
        { authorization: `Bearer ses_${'A'.repeat(43)}` },
        { authorization: `Bearer agnt_${'A'.repeat(43)}` },
        { authorization: `Bearer agk_${'A'.repeat(43)}` },
      ];
      for (const headers of cases) {
        for (const [method, path] of [['GET', '/agents'], ['POST', '/agents'], ['GET', '/account/usage'], ['DELETE', '/agents/agt_x']]) {
          const response = await control.request(method!, path!, { headers, body: method === 'POST' ? { name: 'x' } : undefined });
          expectError(response, 401, 'AUTHENTICATION_FAILED');
        }
      }
    });

    // RFC 9110 §11.6.1: a 401 response MUST carry WWW-Authenticate with the scheme to use.
    it('names the Bearer scheme in WWW-Authenticate on a 401', async () => {
      const response = await control.request('GET', '/agents');
      expectError(response, 401, 'AUTHENTICATION_FAILED');
      assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer\b/i);
    });

    it('refuses an agent access key as a control API token', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      expectError(await control.request('GET', '/agents', { token: agent.access_key }), 401, 'AUTHENTICATION_FAILED');
    });

    it('checks the token before the body: no details of validation leak to a stranger', async () => {
      const response = await control.request('POST', '/agents', { body: { bogus: true } });
      expectError(response, 401, 'AUTHENTICATION_FAILED');
    });

    it('gives 422 details.errors as [{loc, msg, type}] with loc starting at body or query', async () => {
      const { token } = await control.signUp();
      const body = await control.request('POST', '/agents', { token, body: { name: 'x', deploy: { port: 'eighty' } } });
      expectError(body, 422, 'VALIDATION_ERROR', ['body', 'deploy', 'port']);
      for (const error of body.body.details.errors) {
        assert.deepEqual(Object.keys(error).sort(), ['loc', 'msg', 'type']);
        assert.equal(error.loc[0], 'body');
      }
      const query = await control.request('GET', '/agents?page_size=500', { token });
      expectError(query, 422, 'VALIDATION_ERROR', ['query', 'page_size']);
    });

    it('answers an empty body where one is required with 422 naming the missing fields', async () => {
      const { token } = await control.signUp();
      const response = await control.request('POST', '/agents', { token });
      expectError(response, 422, 'VALIDATION_ERROR', ['body', 'name']);
    });

    it('answers malformed JSON with 422 at body, on every endpoint that takes a body', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      const malformed = { rawBody: '{"label":', headers: { 'content-type': 'application/json' } };
      for (const [method, path] of [
        ['POST', '/agents'],
        ['PATCH', `/agents/${agent.id}`],
        ['POST', `/agents/${agent.id}/access-keys`],
        ['POST', '/api-keys'],
        ['POST', '/auth/login'],
        ['POST', '/auth/register'],
      ]) {
        expectError(await control.request(method!, path!, { token, ...malformed }), 422, 'VALIDATION_ERROR', ['body']);
      }
    });

    it('answers a body over 1 MiB with 413 PAYLOAD_TOO_LARGE, declared or streamed', async () => {
      const { token } = await control.signUp();
      const big = JSON.stringify({ name: 'big', system_prompt: 'p'.repeat(1024 * 1024) });
      expectError(await control.request('POST', '/agents', { token, rawBody: big, headers: { 'content-type': 'application/json' } }), 413, 'PAYLOAD_TOO_LARGE');

      // Without Content-Length (chunked), the limit holds while the body is read.
      const streamed = await postChunked(`${control.baseUrl}/agents`, token, big);
      assert.equal(streamed.status, 413);
      assert.equal(streamed.body.code, 'PAYLOAD_TOO_LARGE');

      const justUnder = JSON.stringify({ label: 'x'.repeat(1024 * 1024 - 100) });
      const underResponse = await control.request('POST', '/api-keys', { token, rawBody: justUnder, headers: { 'content-type': 'application/json' } });
      expectError(underResponse, 422, 'VALIDATION_ERROR', ['body', 'label']);
    });

    it('never answers with a stack trace or SQL in the message', async () => {
      const { token } = await control.signUp();
      const responses = [
        await control.request('GET', '/agents/%27%3B%20drop%20table%20agents%3B--', { token }),
        await control.request('GET', `/agents/${'x'.repeat(5000)}`, { token }),
        await control.request('DELETE', '/agents/agt_x/access-keys/%00', { token }),
      ];
      for (const response of responses) {
        assert.ok(response.status < 500, `${response.status} ${JSON.stringify(response.body)}`);
        assert.ok(!/at .*\.ts:\d+|select |insert /i.test(JSON.stringify(response.body)), JSON.stringify(response.body));
      }
    });
  });

  describe('GET /v1/openapi.json', () => {
    let document: any;

    before(async () => {
      const response = await control.request('GET', '/openapi.json');
      expectStatus(response, 200);
      document = response.body;
    });

    it('is an OpenAPI 3.1 document, served without authentication', () => {
      assert.match(document.openapi, /^3\.1\./);
      assert.equal(typeof document.info?.title, 'string');
      assert.equal(typeof document.paths, 'object');
    });

    it('lists every path and method the API serves', () => {
      const documented = new Set<string>();
      for (const [path, item] of Object.entries<any>(document.paths)) {
        for (const method of Object.keys(item).filter((key) => HTTP_METHODS.includes(key))) {
          documented.add(`${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`);
        }
      }
      const missing = SERVED.filter((operation) => !documented.has(operation));
      assert.deepEqual(missing, [], `not documented: ${missing.join(', ')}`);
    });

    it('documents only operations the server answers', async () => {
      for (const [path, item] of Object.entries<any>(document.paths)) {
        for (const method of Object.keys(item).filter((key) => HTTP_METHODS.includes(key))) {
          const operation = item[method];
          const concrete = path.replace(/\{[^}]+\}/g, 'agt_probe');
          // Unauthenticated: an operation that needs a token answers 401, so no stream is opened.
          const response = await control.request(method.toUpperCase(), concrete, {
            body: operation.requestBody ? {} : undefined,
          });
          assert.notEqual(response.status, 405, `${method} ${path}`);
          // An operation whose security includes {} (accepting an invite) also runs without a token.
          const tokenOptional = operation.security?.some((requirement: object) => Object.keys(requirement).length === 0);
          if (operation.security?.length && !tokenOptional) assert.equal(response.status, 401, `${method} ${path}: ${response.status}`);
          // A 404 of the operation's own (no account has the SSO slug probed) is an answer; the router's is not.
          else assert.notEqual(response.body?.message, 'No such endpoint', `${method} ${path}: ${response.status}`);
        }
      }
    });

    it('POST /agents: its body schema forbids other properties and limits name to 128 characters', () => {
      const schema = resolve(document, document.paths['/agents'].post.requestBody.content['application/json'].schema);
      assert.equal(schema.type, 'object');
      assert.equal(schema.additionalProperties, false);
      assert.ok(schema.required.includes('name'));
      const name = resolve(document, schema.properties.name);
      assert.equal(name.type, 'string');
      assert.equal(name.maxLength, 128);
      assert.equal(name.minLength, 1);
      const deploy = resolve(document, schema.properties.deploy);
      assert.equal(deploy.additionalProperties, false);
      assert.equal(resolve(document, deploy.properties.port).maximum, 65535);
    });

    it('resolves every $ref inside the document', () => {
      const refs: string[] = [];
      const walk = (node: unknown) => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (node === null || typeof node !== 'object') return;
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref' && typeof value === 'string') refs.push(value);
          else walk(value);
        }
      };
      walk(document);
      assert.ok(refs.length > 0, 'the document uses components');
      const broken = [...new Set(refs)].filter((ref) => {
        try {
          return pointer(document, ref) === undefined;
        } catch {
          return true;
        }
      });
      assert.deepEqual(broken, [], `unresolved $refs: ${broken.join(', ')}`);
    });

    it('documents the agent with the fields the API returns', async () => {
      const agentSchema = pointer(document, '#/components/schemas/Agent');
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      assert.deepEqual(Object.keys(agentSchema.properties).sort(), Object.keys(agent).sort());
    });
  });

  describe('GET /healthz', () => {
    it('answers 200 without authentication, outside /v1', async () => {
      const response = await fetch(control.baseUrl.replace(/\/v1$/, '') + '/healthz');
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { status: 'ok', dependencies: { postgres: 'ok', redis: 'ok' } });
    });
  });
});

describe('control API: per-token rate limit', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl({ TOKEN_RATE_LIMIT_PER_MINUTE: '5' });
  });
  after(async () => control?.close());

  it('answers the 6th request of a minute with 429 RATE_LIMIT_EXCEEDED and Retry-After, and the next minute again', async () => {
    const { token } = await control.signUp();
    for (let i = 1; i <= 5; i += 1) expectStatus(await control.request('GET', '/agents', { token }), 200);
    const limited = await control.request('GET', '/agents', { token });
    expectError(limited, 429, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = limited.headers.get('retry-after') ?? '';
    assert.match(retryAfter, /^\d+$/);
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, retryAfter);

    control.clock.advance(60_000);
    expectStatus(await control.request('GET', '/agents', { token }), 200);
  });

  it('counts each token on its own', async () => {
    const first = await control.signUp();
    const second = await control.signUp();
    for (let i = 1; i <= 5; i += 1) expectStatus(await control.request('GET', '/auth/me', { token: first.token }), 200);
    expectError(await control.request('GET', '/auth/me', { token: first.token }), 429, 'RATE_LIMIT_EXCEEDED');
    expectStatus(await control.request('GET', '/auth/me', { token: second.token }), 200);
  });

  it('counts writes and reads of one token together, and limits a personal API key too', async () => {
    const { token } = await control.signUp();
    const key = (await control.request('POST', '/api-keys', { token, body: { label: 'ci' } })).body.key;
    for (let i = 1; i <= 3; i += 1) expectStatus(await control.request('POST', '/agents', { token: key, body: { name: `a${i}` } }), 201);
    for (let i = 1; i <= 2; i += 1) expectStatus(await control.request('GET', '/agents', { token: key }), 200);
    expectError(await control.request('POST', '/agents', { token: key, body: { name: 'over' } }), 429, 'RATE_LIMIT_EXCEEDED');
    const listed = await control.request('GET', '/agents', { token });
    assert.equal(listed.body.total, 3, 'the refused create made no agent');
  });

  it('does not limit the endpoints that need no token', async () => {
    for (let i = 1; i <= 8; i += 1) expectStatus(await control.request('GET', '/auth/registration'), 200);
    for (let i = 1; i <= 8; i += 1) expectStatus(await control.request('GET', '/openapi.json'), 200);
  });
});

/** Follows a JSON pointer such as `#/components/schemas/Agent`. */
function pointer(document: any, ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((node, part) => (node === undefined ? undefined : node[part]), document);
}

const resolve = (document: any, schema: any): any => (schema?.$ref ? resolve(document, pointer(document, schema.$ref)) : schema);

/** POSTs `body` with chunked transfer encoding (no Content-Length). */
function postChunked(url: string, token: string, body: string): Promise<{ status: number; body: any }> {
  return new Promise((resolvePromise, reject) => {
    const request = httpRequest(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolvePromise({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    // The server may answer and close before the whole body is written.
    request.on('error', (error) => (request.writableEnded ? undefined : reject(error)));
    const chunkSize = 64 * 1024;
    for (let offset = 0; offset < body.length; offset += chunkSize) request.write(body.slice(offset, offset + chunkSize));
    request.end();
  });
}
