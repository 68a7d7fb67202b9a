import { strict as assert } from 'node:assert';
import http2 from 'node:http2';
import { credentials, makeGenericClientConstructor, status, type ServiceError } from '@grpc/grpc-js';
import type { ClientStreamCall, GrpcCallback, GrpcServer, UnaryCall } from '../authz/grpc-server.js';
import type { AuthzServerKind } from '../authz/config.js';
import { DEFAULT_HTTP2_LIMITS } from '../authz/http2/limits.js';
import { GRPC_SERVERS } from '../authz/server.js';
import { frameMessage } from '../proto/grpc-wire.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';

/**
 * authz's lean gRPC server (authz/grpc-server.ts) as a gRPC client sees it: grpc-js's own
 * client for what a well-behaved caller does, raw HTTP/2 for what only a broken or hostile
 * one sends. Each expectation is grpc/grpc doc/PROTOCOL-HTTP2.md's.
 */
const identity = (bytes: Buffer) => bytes;
const CODEC = { requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity };
const TEST_SERVICE = {
  Echo: { path: '/test.Lean/Echo', requestStream: false, responseStream: false, ...CODEC },
  Slow: { path: '/test.Lean/Slow', requestStream: false, responseStream: false, ...CODEC },
  Fail: { path: '/test.Lean/Fail', requestStream: false, responseStream: false, ...CODEC },
  Collect: { path: '/test.Lean/Collect', requestStream: true, responseStream: false, ...CODEC },
  Missing: { path: '/test.Lean/Missing', requestStream: false, responseStream: false, ...CODEC },
};

interface TestClient {
  Echo(request: Buffer, callback: (error: ServiceError | null, response?: Buffer) => void): void;
  Slow(request: Buffer, options: { deadline: Date }, callback: (error: ServiceError | null, response?: Buffer) => void): void;
  Fail(request: Buffer, callback: (error: ServiceError | null, response?: Buffer) => void): void;
  Missing(request: Buffer, callback: (error: ServiceError | null, response?: Buffer) => void): void;
  Collect(callback: (error: ServiceError | null, response?: Buffer) => void): { write(message: Buffer): void; end(): void };
  close(): void;
}

/**
 * Where the two servers answer differently, each one's answer (docs/edge.md, "AUTHZ_SERVER"):
 * calls that neither Envoy nor the local edge makes, each answer within PROTOCOL-HTTP2.md.
 */
const DIFFERENT_ANSWERS: Record<AuthzServerKind, { grpcMessage: string; grpcWebHttpStatus: number; noMessage: status; cutMessage: status; flaggedUncompressed: status; gzipNamed: status }> = {
  own: {
    // Percent-encodes '%' and bytes outside 0x20-0x7E only, as the spec's Percent-Encoded asks.
    grpcMessage: 'no such thing: 100%25 gone',
    // grpc-web is not gRPC, as Envoy's Common::hasGrpcContentType has it.
    grpcWebHttpStatus: 415,
    noMessage: status.INTERNAL,
    cutMessage: status.INTERNAL,
    // The Compressed-Flag set with no grpc-encoding: nothing could have compressed it.
    flaggedUncompressed: status.INTERNAL,
    // No compression at all: a call naming an encoding is refused, its message compressed or not.
    gzipNamed: status.UNIMPLEMENTED,
  },
  'grpc-js': {
    // encodeURI: spaces too, which every client decodes alike (the details above are the same).
    grpcMessage: 'no%20such%20thing:%20100%25%20gone',
    // Any content-type beginning application/grpc is served (server.js, _verifyContentType).
    grpcWebHttpStatus: 200,
    // "Received no request message": a half-close before a whole message.
    noMessage: status.UNIMPLEMENTED,
    cutMessage: status.UNIMPLEMENTED,
    // The flag is read only with an encoding named (decompressMessage): the message is taken as it is.
    flaggedUncompressed: status.OK,
    // grpc-js reads gzip and deflate; this message's flag says it is not compressed.
    gzipNamed: status.OK,
  },
};

async function listenOnFreePort(server: GrpcServer): Promise<number> {
  const bound = await server.listen({ host: '127.0.0.1', port: 0 });
  if (!('port' in bound)) throw new Error('expected a TCP port');
  return bound.port;
}

interface RawAnswer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

describeOnEachAuthzServer('authz gRPC server', function (kind) {
  const answers = DIFFERENT_ANSWERS[kind];
  let server: GrpcServer;
  let port: number;
  let client: TestClient;
  const slowCalls: GrpcCallback<Buffer>[] = [];
  const streams: { messages: string[]; outcome: string }[] = [];

  before(async function () {
    server = GRPC_SERVERS[kind]();
    server.addService(TEST_SERVICE, {
      Echo: (call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => callback(null, Buffer.concat([Buffer.from('echo:'), call.request])),
      Slow: (_call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => slowCalls.push(callback),
      Fail: (_call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => callback({ code: status.NOT_FOUND, details: 'no such thing: 100% gone' }),
      Collect: (call: ClientStreamCall<Buffer>, callback: GrpcCallback<Buffer>) => {
        const seen = { messages: [] as string[], outcome: 'open' };
        streams.push(seen);
        call.on('data', (message) => seen.messages.push(message.toString()));
        call.on('end', () => {
          seen.outcome = 'ended';
          callback(null, Buffer.from(seen.messages.join(',')));
        });
        call.on('cancelled', () => (seen.outcome = 'cancelled'));
      },
    });
    port = await listenOnFreePort(server);
    const Client = makeGenericClientConstructor(TEST_SERVICE, 'Lean');
    client = new Client(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as TestClient;
  });

  after(async function () {
    client.close();
    server.forceShutdown();
  });

  const call = <T>(invoke: (callback: (error: ServiceError | null, response?: T) => void) => void) =>
    new Promise<{ error: ServiceError | null; response?: T }>((resolve) => invoke((error, response) => resolve({ error, response })));

  /** One call over raw HTTP/2: `frames` are written as separate DATA frames. */
  async function raw(headers: http2.OutgoingHttpHeaders, frames: Buffer[]): Promise<RawAnswer> {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const stream = session.request({ ':method': 'POST', ':path': TEST_SERVICE.Echo.path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
      for (const frame of frames) stream.write(frame);
      stream.end();
      const answer: RawAnswer = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
      stream.on('response', (received) => (answer.headers = received));
      stream.on('trailers', (received) => (answer.trailers = received));
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      await new Promise<void>((resolve) => stream.on('close', () => resolve()));
      answer.body = Buffer.concat(chunks);
      return answer;
    } finally {
      session.close();
    }
  }
  const statusOf = (answer: RawAnswer) => Number(answer.trailers['grpc-status'] ?? answer.headers['grpc-status']);

  it('answers a unary call with its message, and an error as its status and percent-encoded message', async function () {
    const ok = await call<Buffer>((done) => client.Echo(Buffer.from('hello'), done));
    assert.equal(ok.error, null);
    assert.equal(ok.response?.toString(), 'echo:hello');

    const failed = await call<Buffer>((done) => client.Fail(Buffer.from('x'), done));
    assert.equal(failed.error?.code, status.NOT_FOUND);
    assert.equal(failed.error?.details, 'no such thing: 100% gone');
    const rawFailed = await raw({ ':path': TEST_SERVICE.Fail.path }, [frameMessage(Buffer.from('x'))]);
    assert.equal(rawFailed.headers['grpc-message'], answers.grpcMessage, 'Trailers-Only, with % encoded');
  });

  it('answers UNIMPLEMENTED to a method it does not serve, and 415 to a request that is not gRPC', async function () {
    const missing = await call<Buffer>((done) => client.Missing(Buffer.from('x'), done));
    assert.equal(missing.error?.code, status.UNIMPLEMENTED);

    const notGrpc = await raw({ 'content-type': 'application/json' }, [Buffer.from('{}')]);
    assert.equal(notGrpc.headers[':status'], 415);
    const grpcWeb = await raw({ 'content-type': 'application/grpc-web' }, [frameMessage(Buffer.from('x'))]);
    assert.equal(grpcWeb.headers[':status'], answers.grpcWebHttpStatus, 'grpc-web');
    const withSuffix = await raw({ 'content-type': 'application/grpc+proto' }, [frameMessage(Buffer.from('x'))]);
    assert.equal(statusOf(withSuffix), status.OK);
  });

  it('reads a message split over many DATA frames, and several messages in one', async function () {
    const framed = frameMessage(Buffer.from('split across frames'));
    const split = await raw({}, [...framed].map((byte) => Buffer.from([byte])));
    assert.equal(statusOf(split), status.OK);
    assert.equal(split.body.subarray(5).toString(), 'echo:split across frames');

    const streamed = await call<Buffer>((done) => {
      const stream = client.Collect(done);
      for (const word of ['one', 'two', 'three']) stream.write(Buffer.from(word));
      stream.end();
    });
    assert.equal(streamed.response?.toString(), 'one,two,three');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(streams.at(-1)!.outcome, 'ended', "an answered call hears nothing after 'end' (grpc-js emits 'cancelled' after every status)");
    const together = await new Promise<RawAnswer>((resolve, reject) =>
      raw({ ':path': TEST_SERVICE.Collect.path }, [Buffer.concat(['a', 'b', 'c'].map((word) => frameMessage(Buffer.from(word))))]).then(resolve, reject),
    );
    assert.equal(together.body.subarray(5).toString(), 'a,b,c');
  });

  it('answers what no valid unary call sends as its server documents: no message, two messages, a cut message, a compressed one, an encoding, an oversized length', async function () {
    const message = frameMessage(Buffer.from('m'));
    const cases: [string, http2.OutgoingHttpHeaders, Buffer[], status][] = [
      ['no message', {}, [], answers.noMessage],
      ['two messages', {}, [message, message], status.UNIMPLEMENTED],
      ['a cut message', {}, [message.subarray(0, 4)], answers.cutMessage],
      ['a compressed message', {}, [Buffer.concat([Buffer.from([1]), message.subarray(1)])], answers.flaggedUncompressed],
      ['grpc-encoding gzip', { 'grpc-encoding': 'gzip' }, [message], answers.gzipNamed],
      // DEFAULT_HTTP2_LIMITS.maxMessageBytes on both servers (64 KiB): the length alone is refused.
      ['a length over 64 KiB', {}, [Buffer.from([0, 0, 1, 0, 1])], status.RESOURCE_EXHAUSTED],
      ['a length over 4 MiB', {}, [Buffer.from([0, 0, 0x40, 0, 1])], status.RESOURCE_EXHAUSTED],
    ];
    for (const [name, headers, frames, expected] of cases) {
      const answer = await raw(headers, frames);
      assert.equal(statusOf(answer), expected, name);
      if (expected === status.OK) assert.equal(answer.body.subarray(5).toString(), 'echo:m', `${name}: served`);
      else assert.equal(answer.body.length, 0, `${name}: no response message`);
    }
    const stillServing = await call<Buffer>((done) => client.Echo(Buffer.from('after'), done));
    assert.equal(stillServing.response?.toString(), 'echo:after');
  });

  it('drops the answer of a call its client cancelled, and tells a client-streaming handler its call is over', async function () {
    const cancelled = await call<Buffer>((done) => client.Slow(Buffer.from('x'), { deadline: new Date(Date.now() + 100) }, done));
    assert.equal(cancelled.error?.code, status.DEADLINE_EXCEEDED);
    await new Promise((resolve) => setTimeout(resolve, 50));
    slowCalls.shift()!(null, Buffer.from('too late')); // must neither throw nor answer anyone

    const before = streams.length;
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const stream = session.request({ ':method': 'POST', ':path': TEST_SERVICE.Collect.path, 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    stream.write(frameMessage(Buffer.from('first')));
    while (streams.length === before || streams.at(-1)!.messages.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    stream.close(http2.constants.NGHTTP2_CANCEL);
    // node:http2's client ends its side (an empty DATA with END_STREAM) before its RST_STREAM, so the call may read as ended: either way the handler learns the call is over.
    while (streams.at(-1)!.outcome === 'open') await new Promise((resolve) => setTimeout(resolve, 10));
    session.close();
    assert.deepEqual(streams.at(-1)!.messages, ['first']);
    const stillServing = await call<Buffer>((done) => client.Echo(Buffer.from('after a reset'), done));
    assert.equal(stillServing.response?.toString(), 'echo:after a reset');
  });

  it("ends a client-streaming call at its grpc-timeout and tells its handler 'cancelled'", async function () {
    const before = streams.length;
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const stream = session.request({ ':method': 'POST', ':path': TEST_SERVICE.Collect.path, 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '100m' });
    stream.on('error', () => undefined);
    session.on('error', () => undefined);
    // The status ends the call; whether the server then resets the client's open side (the own server) or leaves it (grpc-js) does not matter here.
    stream.write(frameMessage(Buffer.from('first')));
    const grpcStatus = await new Promise<string>((resolve) => {
      stream.on('response', (head) => head['grpc-status'] !== undefined && resolve(String(head['grpc-status'])));
      stream.on('trailers', (trailers) => resolve(String(trailers['grpc-status'])));
    });
    stream.close();
    session.close();
    assert.equal(grpcStatus, String(status.DEADLINE_EXCEEDED));
    assert.equal(streams.length, before + 1);
    assert.equal(streams.at(-1)!.outcome, 'cancelled', 'the handler does not hold the call for ever');
  });

  it('advertises the same bound on concurrent streams per connection (authz/http2/limits.ts)', async function () {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      await new Promise<void>((resolve, reject) => session.once('remoteSettings', () => resolve()).once('error', reject));
      assert.equal(session.remoteSettings.maxConcurrentStreams, DEFAULT_HTTP2_LIMITS.maxConcurrentStreams);
    } finally {
      session.close();
    }
  });

  it("answers HTTP/2 PINGs, which envoy.yaml's connection_keepalive sends to authz's cluster and closes the connection without", async function () {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      await new Promise<void>((resolve, reject) => session.once('connect', () => resolve()).once('error', reject));
      const acknowledged = await new Promise<boolean>((resolve, reject) => session.ping((error) => (error ? reject(error) : resolve(true))));
      assert.equal(acknowledged, true);
    } finally {
      session.close();
    }
  });

  it('lets an open call finish on shutdown, then refuses new connections', async function () {
    const own = GRPC_SERVERS[kind]();
    own.addService(TEST_SERVICE, { Slow: (_call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => setTimeout(() => callback(null, Buffer.from('done')), 200) });
    const ownPort = await listenOnFreePort(own);
    const Client = makeGenericClientConstructor(TEST_SERVICE, 'Lean');
    const ownClient = new Client(`127.0.0.1:${ownPort}`, credentials.createInsecure()) as unknown as TestClient;
    const open = call<Buffer>((done) => ownClient.Slow(Buffer.from('x'), { deadline: new Date(Date.now() + 5_000) }, done));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const stopped = own.shutdown();
    const answered = await open;
    await stopped;
    assert.equal(answered.response?.toString(), 'done');
    const refused = await call<Buffer>((done) => ownClient.Slow(Buffer.from('x'), { deadline: new Date(Date.now() + 1_000) }, done));
    assert.equal(refused.error?.code, status.UNAVAILABLE);
    ownClient.close();
  });

  it('drops, after the grace it was given, a connection whose client never closes its stream', async function () {
    const own = GRPC_SERVERS[kind]();
    own.addService(TEST_SERVICE, { Collect: (call: ClientStreamCall<Buffer>, callback: GrpcCallback<Buffer>) => call.on('end', () => callback(null, Buffer.from('done'))) });
    const ownPort = await listenOnFreePort(own);
    const session = http2.connect(`http://127.0.0.1:${ownPort}`);
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ':path': TEST_SERVICE.Collect.path, 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    stream.write(frameMessage(Buffer.from('one')));
    // The call is open on the server once its first message is in; the client never ends it.
    await new Promise((resolve) => stream.once('ready', resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const sessionClosed = new Promise((resolve) => session.once('close', resolve));
    await own.shutdown(200);
    await sessionClosed;
    assert.ok(stream.destroyed, 'the stream the client held open is gone with its connection');
  });
});
