import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { BillingCustomer, BillingProvider } from '../control/billing/provider.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { bodyText, deepNesting, hostileValue, malformedBody, pathSegment, queryValue, withLoneSurrogate, withNul, wrongType } from './support/fuzz/hostile-input.js';
import { assertWellFormed, concretePath, describe as describeRequest, locOf, operationsOf, resolverFor, send, type Operation, type RawRequest } from './support/fuzz/operations.js';
import { fieldPaths, fullValue, validValue, withValueAt, type FieldPath, type Resolve, type Schema } from './support/fuzz/schema-values.js';

/**
 * Property-based fuzzing of every operation in the OpenAPI document (so new routes are
 * covered without editing this file): every body field, path id and query value gets
 * NUL, lone surrogates, odd Unicode, huge, deep, wrong-type and extra-field input. No
 * answer may be a 5xx, and every error must be docs/contract.md's {code, message, details}.
 *
 * FUZZ_RUNS sets the random cases per operation (default 25, about half a minute in
 * all); FUZZ_RUNS=5000 is the long run. FUZZ_SEED replays a failure that fast-check reported.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const propertyOptions = { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) };

/** Accepts every plan change, so the subscription route runs to its end instead of 503 BILLING_NOT_CONFIGURED. */
const acceptingBilling: BillingProvider = {
  name: 'fuzz',
  customerFor: async (accountId: string): Promise<BillingCustomer> => ({ id: `cus_${accountId}` }),
  subscribe: async () => undefined,
};

describe('control API fuzz: hostile input never gives a 5xx', function () {
  // The long run (FUZZ_RUNS=5000) takes as long as it needs; the default stays well inside this.
  this.timeout(Math.max(120_000, RUNS * 2_000));
  let control: TestControl;
  let token: string;
  /** What POST /auth/logout is sent with: a personal API key is refused it (403) and stays, where the session would end. */
  let logoutToken: string;
  let operations: Operation[];
  let resolve: Resolve;
  /** Real ids, so that some requests reach the handlers past the "no such agent" check. */
  let realIds: string[];

  before(async () => {
    control = await startControl(
      // Every case must get past the per-token and login limits to reach validation and the handlers.
      { TOKEN_RATE_LIMIT_PER_MINUTE: '1000000', LOGIN_RATE_LIMIT_PER_MINUTE: '10000' },
      { billing: acceptingBilling },
    );
    ({ token } = await control.signUp());
    const agent = await createAgent(control, token, { name: 'fuzz target', access: 'private' });
    const accessKey = await control.request('POST', `/agents/${agent.id}/access-keys`, { token, body: { label: 'fuzz' } });
    expectStatus(accessKey, 201);
    const apiKey = await control.request('POST', '/api-keys', { token, body: { label: 'fuzz' } });
    expectStatus(apiKey, 201);
    realIds = [agent.id, accessKey.body.id, apiKey.body.id];
    logoutToken = apiKey.body.key;
    const document = (await control.request('GET', '/openapi.json')).body;
    operations = operationsOf(document);
    resolve = resolverFor(document);
  });
  after(async () => control?.close());

  const baseUrl = () => control.baseUrl;

  /** A request to `operation`, its path ids and body filled by the caller. */
  const requestTo = (operation: Operation, segments: Record<string, string>, extra: Partial<RawRequest> = {}): RawRequest => ({
    method: operation.method,
    target: concretePath(operation, segments),
    ...(operation.authenticated ? { token: operation.path === '/auth/logout' ? logoutToken : token } : {}),
    ...extra,
  });
  /** Real ids for every path parameter; a DELETE gets none, so the fixtures survive the run. */
  const realSegments = (operation: Operation): Record<string, string> =>
    Object.fromEntries(operation.pathParams.map((name, i) => [name, operation.method === 'DELETE' ? `none${i}` : realIds[i]!]));
  const jsonBody = (value: unknown) => ({ body: bodyText(value), contentType: 'application/json' });

  it('finds the operations in the OpenAPI document', () => {
    const names = operations.map((op) => `${op.method} ${op.path}`);
    for (const expected of ['POST /agents', 'POST /auth/login', 'GET /agents/{id}/logs', 'DELETE /agents/{id}/access-keys/{keyId}']) {
      assert.ok(names.includes(expected), `${expected} not in ${names.join(', ')}`);
    }
    assert.ok(operations.filter((op) => op.body).length >= 8, 'operations with a body');
  });

  describe('every body field', () => {
    /** One request per field and kind of text Postgres cannot store: 422 at exactly that field. */
    for (const [kind, text] of [['NUL', withNul], ['lone surrogate', withLoneSurrogate]] as const) {
      it(`answers ${kind} in any field, or in a field's name, with 422 at that field`, async () => {
        for (const operation of operations.filter((op) => op.body)) {
          const [base] = fc.sample(fullValue(operation.body!, resolve), { numRuns: 1, seed: 1 });
          for (const path of fieldPaths(operation.body!, resolve)) {
            const [bad] = fc.sample(text, { numRuns: 1, seed: path.length });
            const badName = [...path.slice(0, -1), `${String(path.at(-1))}${bad}`];
            for (const [value, at] of [[withValueAt(base, path, bad), path], [withValueAt(base, badName, 'x'), badName]] as [unknown, FieldPath][]) {
              const request = requestTo(operation, realSegments(operation), jsonBody(value));
              const response = await send(baseUrl(), request);
              assertWellFormed(request, response);
              assert.equal(response.status, 422, describeRequest(request));
              const locs = response.body.details.errors.map((e: { loc: unknown }) => JSON.stringify(e.loc));
              assert.ok(locs.includes(locOf('body', at)), `${describeRequest(request)}: expected ${locOf('body', at)} in ${locs.join(' ')}`);
            }
          }
        }
      });
    }

    it('answers a value of the wrong type in any field with 422 at that field', async () => {
      for (const operation of operations.filter((op) => op.body)) {
        for (const path of fieldPaths(operation.body!, resolve)) {
          const schema = schemaAt(operation.body!, path, resolve);
          const objectTyped = schema.type === 'object' || (Array.isArray(schema.type) && schema.type.includes('object'));
          const wrong = objectTyped ? 'not an object' : { not: 'this type' };
          const request = requestTo(operation, realSegments(operation), jsonBody(withValueAt({}, path, wrong)));
          const response = await send(baseUrl(), request);
          assertWellFormed(request, response);
          assert.equal(response.status, 422, describeRequest(request));
          const locs = response.body.details.errors.map((e: { loc: unknown }) => JSON.stringify(e.loc));
          assert.ok(locs.includes(locOf('body', path)), `${describeRequest(request)}: expected ${locOf('body', path)} in ${locs.join(' ')}`);
        }
      }
    });

    it('survives random hostile values in random fields of otherwise valid bodies', async () => {
      for (const operation of operations.filter((op) => op.body)) {
        const paths = fieldPaths(operation.body!, resolve);
        const bodies = fc.oneof(
          // Valid: odd-but-allowed Unicode reaches Postgres.
          validValue(operation.body!, resolve),
          fc.tuple(fullValue(operation.body!, resolve), fc.constantFrom(...paths), hostileValue).map(([base, path, value]) => withValueAt(base, path, value)),
          fc.tuple(validValue(operation.body!, resolve), fc.string({ maxLength: 20 }), fc.oneof(wrongType, deepNesting)).map(([base, key, value]) => withValueAt(base, [key], value)),
          hostileValue,
        );
        await holds(
          fc.asyncProperty(bodies, fc.boolean(), async (value, withToken) => {
            const request = requestTo(operation, realSegments(operation), jsonBody(value));
            if (!withToken) delete request.token;
            assertWellFormed(request, await send(baseUrl(), request));
          }),
          propertyOptions,
        );
      }
    });

    it('survives bodies that are not JSON, or not declared as JSON', async () => {
      for (const operation of operations.filter((op) => op.body)) {
        await holds(
          fc.asyncProperty(malformedBody, async ({ raw, contentType }) => {
            const request = requestTo(operation, realSegments(operation), { body: raw, contentType });
            assertWellFormed(request, await send(baseUrl(), request));
          }),
          { ...propertyOptions, numRuns: Math.max(5, Math.ceil(RUNS / 3)) },
        );
      }
    });
  });

  describe('path ids and query values', () => {
    it('answers %00 in any path id with 404 NOT_FOUND', async () => {
      for (const operation of operations.filter((op) => op.pathParams.length > 0)) {
        for (const param of operation.pathParams) {
          const request = requestTo(operation, { ...realSegments(operation), [param]: `x%00${param}` }, operation.body ? jsonBody({}) : {});
          const response = await send(baseUrl(), request);
          assertWellFormed(request, response);
          assert.equal(response.status, 404, describeRequest(request));
          assert.equal(response.body.code, 'NOT_FOUND');
        }
      }
    });

    it('answers %00 in any query value with 422 at that parameter', async () => {
      for (const operation of operations) {
        for (const name of [...operation.query.map((q) => q.name), 'undocumented']) {
          const base = concretePath(operation, realSegments(operation));
          const request: RawRequest = { ...requestTo(operation, {}), target: `${base}?${name}=a%00b`, ...(operation.body ? jsonBody({}) : {}) };
          const response = await send(baseUrl(), request);
          assertWellFormed(request, response);
          assert.equal(response.status, 422, describeRequest(request));
          const locs = response.body.details.errors.map((e: { loc: unknown }) => JSON.stringify(e.loc));
          assert.ok(locs.includes(locOf('query', [name])), `${describeRequest(request)}: ${locs.join(' ')}`);
        }
      }
    });

    it('answers a number query value past the float range (1e400, coerced to Infinity) with 422', async () => {
      const numeric = operations.flatMap((op) => op.query.filter((q) => ['integer', 'number'].includes(q.schema.type)).map((q) => [op, q.name] as const));
      assert.ok(numeric.length > 0, 'some operation takes a number in its query');
      for (const [operation, name] of numeric) {
        const request: RawRequest = { ...requestTo(operation, {}), target: `${concretePath(operation, realSegments(operation))}?${name}=1e400` };
        const response = await send(baseUrl(), request);
        assertWellFormed(request, response);
        assert.equal(response.status, 422, describeRequest(request));
      }
    });

    it('survives random path ids, query values and headers', async () => {
      for (const operation of operations) {
        const segments = fc.record(Object.fromEntries(operation.pathParams.map((name) => [name, pathSegment(operation.method === 'DELETE' ? [] : realIds)])));
        const names = [...operation.query.map((q) => q.name), 'extra', 'page', 'x[y]'];
        const query = fc.array(fc.tuple(fc.constantFrom(...names), queryValue), { maxLength: 4 });
        const headers = fc.record(
          { 'if-match': fc.oneof(fc.constantFrom('*', '"1"', 'W/"2"', '"99999999999999999999"'), fc.string({ unit: 'grapheme-ascii', maxLength: 30 })), 'last-event-id': fc.string({ unit: 'grapheme-ascii', maxLength: 30 }) },
          { requiredKeys: [] },
        );
        await holds(
          fc.asyncProperty(segments, query, headers, async (chosen, pairs, extraHeaders) => {
            const search = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${value}`).join('&');
            const request = requestTo(operation, chosen as Record<string, string>, {
              headers: cleanHeaders(extraHeaders),
              ...(operation.body ? jsonBody({}) : {}),
            });
            if (search) request.target += `?${search}`;
            assertWellFormed(request, await send(baseUrl(), request));
          }),
          propertyOptions,
        );
      }
    });

    it('survives unknown paths and methods under /v1', async () => {
      const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');
      const path = fc.array(pathSegment(realIds), { minLength: 1, maxLength: 4 }).map((segments) => `/${segments.join('/')}`);
      await holds(
        fc.asyncProperty(method, path, async (chosen, target) => {
          const request: RawRequest = { method: chosen, target, token };
          assertWellFormed(request, await send(baseUrl(), request));
        }),
        { ...propertyOptions, numRuns: RUNS * 4 },
      );
    });
  });
});

/**
 * Runs a property; on failure reports the failing request (already shortened by the
 * assertion) and the seed to replay it, not fast-check's dump of a 1 MiB counterexample.
 */
async function holds<T>(property: fc.IAsyncProperty<T>, options: fc.Parameters<T>): Promise<void> {
  const details = await fc.check(property, options);
  if (!details.failed) return;
  const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`failed after ${details.numRuns} cases (replay: FUZZ_SEED=${details.seed}; path ${details.counterexamplePath}): ${cause}`);
}

/** The schema of the field at `path`. */
function schemaAt(schema: Schema, path: FieldPath, resolve: Resolve): Schema {
  let at = resolve(schema);
  for (const part of path) {
    if (typeof part === 'number') at = resolve(at.items);
    else at = resolve(at.properties?.[part] ?? Object.values<Schema>(at.patternProperties ?? {})[0]!);
  }
  return at;
}

/** fetch refuses header values with control characters; such headers cannot arrive from Node's parser either. */
function cleanHeaders(headers: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined && /^[\x20-\x7e]*$/.test(e[1])));
}
