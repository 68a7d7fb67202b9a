import assert from 'node:assert/strict';
import fc from 'fast-check';
import { loadAuthorizationService } from '../proto/load.js';
import { factsOf, fieldsOf, type CheckRequest } from '../authz/check-request.js';
import { checkRequestDeserializer, decodeCheckRequestFields } from '../authz/check-request-decoder.js';
import { checkRequestWire, encodeWire } from './support/check-request-wire.js';

/**
 * authz decodes Check's request with its own walk of the wire format
 * (authz/check-request-decoder.ts). Whatever bytes arrive, the facts it decides on must be
 * those proto-loader's full decode gives, the reading authz had before.
 */
describe('authz fast CheckRequest decoder', () => {
  const check = loadAuthorizationService().service.Check!;
  const fullDecode = (bytes: Buffer) => check.requestDeserialize(bytes) as CheckRequest;
  const serialize = (request: object) => check.requestSerialize(request) as Buffer;

  it('agrees with proto-loader on 10,000 generated CheckRequests, and decodes most of them itself', () => {
    let walked = 0;
    let withKey = 0;
    fc.assert(
      fc.property(checkRequestWire, (wire) => {
        const bytes = encodeWire(wire);
        const reference = fieldsOf(fullDecode(bytes));
        const fast = decodeCheckRequestFields(bytes);
        if (fast !== null) {
          assert.deepEqual(fast, reference);
          walked += 1;
          if (fast.authorization !== undefined) withKey += 1;
        }
        for (const trust of [false, true]) {
          assert.deepEqual(checkRequestDeserializer(fullDecode, trust)(bytes), factsOf(reference, trust));
        }
      }),
      { numRuns: 10_000 },
    );
    // The walk gives up only on split messages (1 in 25 per message) and the like: if it
    // gave up on everything, agreement would prove nothing.
    assert.ok(walked > 5_000, `the fast walk decoded only ${walked} of 10,000`);
    assert.ok(withKey > 500, `only ${withKey} walked requests carried an authorization header`);
  });

  it('reads a CheckRequest as Envoy sends it: 13 headers, source and destination addresses', () => {
    const headers = {
      ':authority': 'shop.agents.example.com', ':method': 'POST', ':path': '/v1/chat', ':scheme': 'https',
      accept: 'application/json', 'accept-encoding': 'gzip, br', authorization: 'Bearer agk_0123456789abcdef',
      'content-length': '512', 'content-type': 'application/json', 'user-agent': 'curl/8.5.0',
      'x-envoy-external-address': ' 203.0.113.50 ', 'x-request-id': '6b4c3f0e-8a1d-4c3e-9f2a-1d2e3f4a5b6c',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    };
    const bytes = serialize({
      attributes: {
        source: { address: { socket_address: { address: '198.51.100.23', port_value: 53124 } } },
        destination: { address: { socket_address: { address: '10.0.0.5', port_value: 7080 } } },
        request: {
          time: { seconds: 1_900_000_000, nanos: 5 },
          http: { id: '1234567890', method: 'POST', host: 'shop.agents.example.com', path: '/v1/chat', scheme: 'https', protocol: 'HTTP/1.1', size: 512, headers },
        },
        context_extensions: { virtual_host: 'agents' },
      },
    });
    const expected = {
      host: 'shop.agents.example.com', peer: '198.51.100.23', authorization: 'Bearer agk_0123456789abcdef', externalAddress: ' 203.0.113.50 ',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', requestId: '6b4c3f0e-8a1d-4c3e-9f2a-1d2e3f4a5b6c',
    };
    assert.deepEqual(decodeCheckRequestFields(bytes), expected);
    assert.deepEqual(fieldsOf(fullDecode(bytes)), expected);
    const deserialize = checkRequestDeserializer(fullDecode, true);
    assert.deepEqual(deserialize(bytes), {
      host: 'shop.agents.example.com', caller: '203.0.113.50', accessKey: 'agk_0123456789abcdef',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', requestId: '6b4c3f0e-8a1d-4c3e-9f2a-1d2e3f4a5b6c',
    });
    assert.deepEqual(checkRequestDeserializer(fullDecode, false)(bytes).caller, '198.51.100.23');
  });

  it('leaves to proto-loader what only a full decode can answer, and fails the call where it does', () => {
    const envoyShaped = serialize({
      attributes: {
        source: { address: { socket_address: { address: '198.51.100.23', port_value: 1 } } },
        request: { http: { host: 'a.agents.localhost', headers: { authorization: 'Bearer agk_x' } } },
      },
    });
    // Truncated anywhere inside: the walk is unsure, and where proto-loader throws the call still fails.
    for (let cut = 1; cut < envoyShaped.length; cut += 1) {
      const bytes = envoyShaped.subarray(0, cut);
      const fast = decodeCheckRequestFields(bytes);
      let full: CheckRequest | Error;
      try {
        full = fullDecode(bytes);
      } catch (error) {
        full = error as Error;
      }
      if (full instanceof Error) {
        assert.equal(fast, null, `cut at ${cut}: the walk answered where proto-loader fails`);
        assert.throws(() => checkRequestDeserializer(fullDecode, false)(bytes));
      } else if (fast !== null) assert.deepEqual(fast, fieldsOf(full), `cut at ${cut}`);
    }
    // `attributes` written twice: proto3 merges, protobufjs keeps the second; the walk defers.
    const twice = Buffer.concat([
      encodeWire([{ field: 1, kind: 'message', split: false, body: [{ field: 4, kind: 'message', split: false, body: [{ field: 2, kind: 'message', split: false, body: [{ field: 5, kind: 'string', value: 'first.agents.localhost' }] }] }] }]),
      encodeWire([{ field: 1, kind: 'message', split: false, body: [{ field: 1, kind: 'message', split: false, body: [] }] }]),
    ]);
    assert.equal(decodeCheckRequestFields(twice), null);
    assert.deepEqual(checkRequestDeserializer(fullDecode, false)(twice), factsOf(fieldsOf(fullDecode(twice)), false));
    // host (a string, field 5) sent as a varint: proto-loader would misread it, so the walk defers.
    assert.equal(decodeCheckRequestFields(encodeWire([{ field: 1, kind: 'message', split: false, body: [{ field: 4, kind: 'message', split: false, body: [{ field: 2, kind: 'message', split: false, body: [{ field: 5, kind: 'varint', value: 7 }] }] }] }])), null);
  });
});
