import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { buildCheckResponse, type CheckResponseMessage } from '../authz/check-response.js';
import type { Decision } from '../authz/decision.js';
import { encodeOkCheckResponse, isOkCheckResponse } from '../authz/ok-response-encoder.js';
import type { EdgeTraceContext } from '../contract/edge-trace.js';
import { loadAuthorizationService } from '../proto/load.js';

/**
 * authz writes an allowed Check's CheckResponse itself (authz/ok-response-encoder.ts), so
 * it must be the very bytes proto-loader writes from Envoy's own protos, for every answer
 * authz can give: checked byte for byte, and read back with proto-loader's decoder.
 */
describe('authz: the allowed CheckResponse written straight to the wire', function () {
  const check = loadAuthorizationService().service.Check!;
  const protoLoaderBytes = (message: CheckResponseMessage) => check.responseSerialize(message as never) as Buffer;

  const allowed = (agentId: string, upstream: string, version: 'stable' | 'canary'): Decision => ({ outcome: 'allowed', agentId, upstream, version });
  const trace = (parentSpanId: string | null): EdgeTraceContext => ({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', parentSpanId, flags: '01' });

  it('writes what proto-loader writes for the answers authz gives: with and without a trace, a parent span or none, either version', function () {
    const cases: [Decision, EdgeTraceContext | undefined][] = [
      [allowed('3f1c2a9e-7c1d-4e55-9a3b-0f6d2b8c1e77', '10.89.0.5:8080', 'stable'), undefined],
      [allowed('3f1c2a9e-7c1d-4e55-9a3b-0f6d2b8c1e77', '10.89.0.5:8080', 'stable'), trace('b7ad6b7169203331')],
      [allowed('3f1c2a9e-7c1d-4e55-9a3b-0f6d2b8c1e77', '[fd00::5]:31000', 'canary'), trace(null)],
    ];
    for (const [decision, context] of cases) {
      const message = buildCheckResponse(decision, context);
      assert.ok(isOkCheckResponse(message));
      assert.deepEqual(encodeOkCheckResponse(message), protoLoaderBytes(message));
    }
  });

  it('reads back, with proto-loader, as the answer Envoy acts on: OK, x-agent-id and traceparent overwritten, authorization removed, the metadata', function () {
    const message = buildCheckResponse(allowed('agent-1', '10.89.0.5:8080', 'canary'), trace('b7ad6b7169203331'));
    assert.ok(isOkCheckResponse(message));
    const decoded = check.responseDeserialize(encodeOkCheckResponse(message)) as {
      status: { code: number };
      ok_response: { headers: { header: { key: string; value: string }; append_action: string }[]; headers_to_remove: string[] };
      dynamic_metadata: { fields: Record<string, { stringValue?: string; string_value?: string }> };
    };
    assert.equal(decoded.status.code, 0);
    assert.deepEqual(
      decoded.ok_response.headers.map(({ header, append_action }) => [header.key, header.value, append_action]),
      [
        ['x-agent-id', 'agent-1', 'OVERWRITE_IF_EXISTS_OR_ADD'],
        ['traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'OVERWRITE_IF_EXISTS_OR_ADD'],
      ],
    );
    assert.deepEqual(decoded.ok_response.headers_to_remove, ['authorization']);
    const metadata = Object.fromEntries(Object.entries(decoded.dynamic_metadata.fields).map(([key, value]) => [key, value.stringValue ?? value.string_value]));
    assert.equal(metadata.upstream, '10.89.0.5:8080');
    assert.equal(Object.values(metadata).includes('canary'), true);
  });

  it('writes what proto-loader writes for any strings: multi-byte UTF-8, lone surrogates, empty, and lengths whose varints take two or three bytes', function () {
    const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ minLength: 120, maxLength: 20_000 }));
    fc.assert(
      fc.property(text, text, fc.constantFrom('stable' as const, 'canary' as const), fc.option(text), (agentId, upstream, version, parent) => {
        const message = buildCheckResponse(allowed(agentId, upstream, version), parent === null ? undefined : trace(parent));
        assert.ok(isOkCheckResponse(message));
        assert.deepEqual(encodeOkCheckResponse(message), protoLoaderBytes(message));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves every denial to proto-loader, through the same serializer authz registers', function () {
    for (const decision of [{ outcome: 'unknown_agent' }, { outcome: 'invalid_key' }, { outcome: 'agent_rate_limited', retryAfterSeconds: 7 }] as Decision[]) {
      assert.equal(isOkCheckResponse(buildCheckResponse(decision)), false, decision.outcome);
    }
  });

  it('refuses a header action Envoy does not define rather than writing a wrong number', function () {
    const message = buildCheckResponse(allowed('agent-1', '10.89.0.5:8080', 'stable'));
    assert.ok(isOkCheckResponse(message));
    message.ok_response.headers[0]!.append_action = 'REPLACE' as never;
    assert.throws(() => encodeOkCheckResponse(message), /unknown HeaderAppendAction REPLACE/);
  });
});
