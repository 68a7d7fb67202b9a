import assert from 'node:assert/strict';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { EDGE_REPLIES } from '../envoy/local-edge/envoy-parity.js';
import { allowedResponse, answerWith, BROKEN_ANSWERS, startRawAuthzServer, type RawAuthzServer } from './support/raw-authz-server.js';
import { edgeRequest, startUpstream, type TestUpstream, LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';

/**
 * The local edge fails closed (envoy.yaml's failure_mode_allow: false): whatever is wrong
 * with authz's answer, the caller gets 503 with the edge's own body and the replica the
 * broken answer names never sees the request. A raw HTTP/2 server plays a broken authz.
 */
describe('local edge: a broken answer from authz is a 503, never a forward', () => {
  let authz: RawAuthzServer;
  let edge: RunningLocalEdge;
  let replica: TestUpstream;

  before(async () => {
    authz = await startRawAuthzServer();
    replica = await startUpstream('named-by-a-broken-answer');
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.address, authzTimeoutMs: 300 });
  });

  after(async () => {
    await edge.close();
    await replica.close();
    await authz.close();
  });

  it('forwards to the replica a well-formed allowing answer names (the broken answers below name the same one)', async () => {
    authz.answer = (stream) => answerWith(stream, allowedResponse(replica.address));
    const response = await edgeRequest({ port: edge.port, host: 'agent.example.test:7080' });
    assert.equal(response.status, 200);
    assert.equal(replica.received.length, 1);
  });

  for (const broken of BROKEN_ANSWERS) {
    it(`answers 503 to ${broken.name}`, async () => {
      authz.answer = (stream) => broken.answer(stream, replica.address);
      const seen = replica.received.length;
      const response = await edgeRequest({ port: edge.port, host: 'agent.example.test:7080' });
      assert.equal(response.status, 503);
      assert.equal(response.body, EDGE_REPLIES.authzUnavailable);
      assert.equal(replica.received.length, seen, 'nothing reached the replica');
    });
  }

  it('answers 503 when authz is past the deadline', async () => {
    authz.answer = () => undefined;
    const seen = replica.received.length;
    const response = await edgeRequest({ port: edge.port, host: 'agent.example.test:7080' });
    assert.equal(response.status, 503);
    assert.equal(response.body, EDGE_REPLIES.authzUnavailable);
    assert.equal(replica.received.length, seen);
  });
});
