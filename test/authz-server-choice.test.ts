import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Redis } from 'ioredis';
import { systemClock } from '../contract/clock.js';
import { isUnixSocket, type GrpcTarget } from '../contract/grpc-target.js';
import { AuthzConfigError, loadAuthzConfig } from '../authz/config.js';
import { envoyCheckRequest, connectTestRedis, startTestAuthz, uniqueAgentDomain } from './support/edge-authz.js';
import { AUTHZ_SERVERS } from './support/authz-servers.js';
import { loadAuthorizationService } from '../proto/load.js';
import { frameMessage } from '../proto/grpc-wire.js';

/**
 * AUTHZ_SERVER, the switch between authz's own HTTP/2 server and grpc-js's (docs/edge.md):
 * read and checked once at start, and obeyed. Which server answers is told apart by a call
 * they answer differently, a grpc-web content-type (test/authz-grpc-server.test.ts lists each
 * such difference): 415 from the own server, served by grpc-js.
 */
describe('AUTHZ_SERVER: the gRPC server authz answers on', function () {
  const base = { REDIS_URL: 'redis://127.0.0.1:6379', AUTHZ_GRPC_SOCKET: '/run/authz/authz.sock' };

  it('is authz\'s own server by default, grpc-js when asked, and anything else is refused by name', function () {
    assert.equal(loadAuthzConfig(base).grpcServer, 'own');
    assert.equal(loadAuthzConfig({ ...base, AUTHZ_SERVER: '' }).grpcServer, 'own');
    assert.equal(loadAuthzConfig({ ...base, AUTHZ_SERVER: 'grpc-js' }).grpcServer, 'grpc-js');
    assert.throws(
      () => loadAuthzConfig({ ...base, AUTHZ_SERVER: 'node-http2' }),
      (error: Error) => error instanceof AuthzConfigError && /AUTHZ_SERVER: expected own .* or grpc-js .*, got "node-http2"/.test(error.message),
    );
  });

  describe('a started authz', function () {
    let redis: Redis;
    before(() => {
      redis = connectTestRedis();
    });
    after(() => redis.disconnect());

    for (const server of AUTHZ_SERVERS) {
      it(`serves on the ${server} server`, async function () {
        const authz = await startTestAuthz({ redis, clock: systemClock, agentDomain: uniqueAgentDomain('server-choice'), server });
        try {
          const answer = await grpcWebCheck(authz.authz.grpcTarget);
          if (server === 'own') assert.equal(answer.httpStatus, 415);
          else assert.deepEqual(answer, { httpStatus: 200, grpcStatus: GrpcStatus.OK });
        } finally {
          await authz.close();
        }
      });
    }
  });
});

/** One Check sent as application/grpc-web over raw HTTP/2: its HTTP status and, if any, its grpc-status. */
async function grpcWebCheck(target: GrpcTarget): Promise<{ httpStatus: number; grpcStatus?: number }> {
  const connect = () => (isUnixSocket(target) ? net.connect(target.path) : net.connect(target.port, target.host));
  const session = http2.connect('http://authz', { createConnection: connect });
  session.on('error', () => undefined);
  try {
    const request = loadAuthorizationService().service.Check!.requestSerialize(envoyCheckRequest({ host: 'nobody.example' })) as Buffer;
    const stream = session.request({
      ':method': 'POST', ':path': '/envoy.service.auth.v3.Authorization/Check', 'content-type': 'application/grpc-web', te: 'trailers',
    });
    stream.end(frameMessage(request));
    let httpStatus = 0;
    let grpcStatus: number | undefined;
    stream.on('response', (headers) => {
      httpStatus = Number(headers[':status']);
      if (headers['grpc-status'] !== undefined) grpcStatus = Number(headers['grpc-status']);
    });
    stream.on('trailers', (trailers) => (grpcStatus = Number(trailers['grpc-status'])));
    stream.resume();
    await new Promise<void>((resolve) => stream.on('close', () => resolve()));
    return grpcStatus === undefined ? { httpStatus } : { httpStatus, grpcStatus };
  } finally {
    session.close();
  }
}
