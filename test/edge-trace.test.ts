import assert from 'node:assert/strict';
import { edgeTraceOf, formatTraceParent, isTracedPath, parseEdgeSpan } from '../contract/edge-trace.js';

/** The edge's trace context (contract/edge-trace.ts) against W3C Trace Context level 1's rules for `traceparent`. */
describe('the edge trace context', () => {
  const spanId = () => 'b7ad6b7169203331';
  const REQUEST_ID = '0af76519-16cd-43dd-8448-eb211c80319c';

  it("continues a valid traceparent: the caller's trace id and flags, its span the edge span's parent", () => {
    const context = edgeTraceOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', REQUEST_ID, spanId);
    assert.deepEqual(context, { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: 'b7ad6b7169203331', parentSpanId: '00f067aa0ba902b7', flags: '01' });
    assert.equal(formatTraceParent(context), '00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01');
    // Not sampled by the caller: kept as it said.
    assert.equal(edgeTraceOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', REQUEST_ID, spanId).flags, '00');
    // A later version may carry more fields; its first four are read as version 00's (§3.2.4, "Versioning").
    assert.equal(edgeTraceOf('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future', REQUEST_ID, spanId).traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('starts a trace named by the request id when the traceparent is missing or invalid', () => {
    const invalid = [
      undefined,
      '',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // version ff is invalid
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01', // all-zero trace id
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // all-zero parent id
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', // upper case
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra', // version 00 has exactly four fields
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01', // a digit short
    ];
    for (const traceparent of invalid) {
      assert.deepEqual(edgeTraceOf(traceparent, REQUEST_ID, spanId), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', parentSpanId: null, flags: '01' }, String(traceparent));
    }
  });

  it('makes a random trace id when the request id is not a UUID, and never an all-zero id', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i += 1) {
      const context = edgeTraceOf(undefined, 'not-a-uuid');
      assert.match(context.traceId, /^[0-9a-f]{32}$/);
      assert.match(context.spanId, /^[0-9a-f]{16}$/);
      assert.notEqual(context.spanId, '0'.repeat(16));
      ids.add(context.traceId).add(context.spanId);
    }
    assert.equal(ids.size, 2000, 'every id new');
  });

  it('records edge spans of the invoke path only, its query aside', () => {
    assert.ok(isTracedPath('/invoke'));
    assert.ok(isTracedPath('/invoke?stream=1'));
    assert.ok(!isTracedPath('/invoke/other'));
    assert.ok(!isTracedPath('/health'));
  });

  it('reads back only what an edge queued: a foreign or corrupted entry is skipped', () => {
    const span = {
      agentId: 'agt_1', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: 'b7ad6b7169203331', parentSpanId: null,
      startMs: 1764230000123.25, durationMs: 12.5, method: 'POST', path: '/invoke', status: 200, requestId: REQUEST_ID, canary: false,
    };
    assert.deepEqual(parseEdgeSpan(JSON.stringify(span)), span);
    assert.equal(parseEdgeSpan('{'), undefined);
    assert.equal(parseEdgeSpan('null'), undefined);
    assert.equal(parseEdgeSpan(JSON.stringify({ ...span, agentId: 'agt_{x}' })), undefined);
    assert.equal(parseEdgeSpan(JSON.stringify({ ...span, traceId: 'xyz' })), undefined);
    assert.equal(parseEdgeSpan(JSON.stringify({ ...span, durationMs: -1 })), undefined);
    assert.equal(parseEdgeSpan(JSON.stringify({ ...span, parentSpanId: 'short' })), undefined);
  });
});
