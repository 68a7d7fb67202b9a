import { strict as assert } from 'node:assert';
import http2 from 'node:http2';
import net from 'node:net';
import { createGrpcServer, type GrpcCallback, type GrpcServer, type UnaryCall } from '../authz/grpc-server.js';
import { CLIENT_PREFACE, encodeFrame, ErrorCode, Flag, FRAME_HEADER_BYTES, FrameType, Setting, settingsPayload, words } from '../authz/http2/frames.js';
import { CompressionError, encodeHeaderBlock, HpackDecoder } from '../authz/http2/hpack.js';
import { frameMessage } from '../proto/grpc-wire.js';

/**
 * authz's own HTTP/2 server (authz/http2/) on the RFCs' terms: HPACK against RFC 7541's
 * examples and against nghttp2's encoder (node:http2's client), the connection against
 * nghttp2 as a peer with unusual settings and against raw frames for each rule of RFC 9113
 * it enforces. test/authz-grpc-server.test.ts holds the gRPC behaviour on top.
 */

type Fields = [string, string][];

function decodeAll(decoder: HpackDecoder, hex: string): Fields {
  const fields: Fields = [];
  decoder.decode(Buffer.from(hex, 'hex'), (name, value) => fields.push([name, value]));
  return fields;
}

/** Frames in `bytes` (after the client preface): each complete one, and the bytes left over. */
function readFrames(bytes: Buffer): { frames: { type: number; flags: number; streamId: number; payload: Buffer }[]; rest: Buffer } {
  const frames = [];
  let at = 0;
  while (bytes.length - at >= FRAME_HEADER_BYTES) {
    const length = bytes.readUIntBE(at, 3);
    if (bytes.length - at < FRAME_HEADER_BYTES + length) break;
    frames.push({ type: bytes[at + 3]!, flags: bytes[at + 4]!, streamId: bytes.readUInt32BE(at + 5) & 0x7fffffff, payload: bytes.subarray(at + 9, at + 9 + length) });
    at += FRAME_HEADER_BYTES + length;
  }
  return { frames, rest: bytes.subarray(at) };
}

describe('authz HTTP/2: HPACK (RFC 7541)', function () {
  const request1: Fields = [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']];
  const request2: Fields = [...request1, ['cache-control', 'no-cache']];
  const request3: Fields = [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']];

  it('decodes the requests of Appendix C.3 (raw literals) and C.4 (Huffman), each three on one dynamic table', function () {
    const raw = new HpackDecoder();
    assert.deepEqual(decodeAll(raw, '828684410f7777772e6578616d706c652e636f6d'), request1);
    assert.deepEqual(decodeAll(raw, '828684be58086e6f2d6361636865'), request2);
    assert.deepEqual(decodeAll(raw, '828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565'), request3);
    const huffman = new HpackDecoder();
    assert.deepEqual(decodeAll(huffman, '828684418cf1e3c2e5f23a6ba0ab90f4ff'), request1);
    assert.deepEqual(decodeAll(huffman, '828684be5886a8eb10649cbf'), request2);
    assert.deepEqual(decodeAll(huffman, '828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf'), request3);
  });

  it('refuses every representation the RFC forbids with a CompressionError, and random blocks with nothing else', function () {
    const forbidden: [string, string][] = [
      ['80', 'index 0 (§6.1)'],
      ['be', 'an index beyond both tables (§2.3.3)'],
      ['3fe21f', 'a table size above the advertised 4,096 (§4.2)'],
      ['8220', 'a table size update after a field (§4.2)'],
      ['40036162', 'a string literal cut short (§5.2)'],
      ['408100', 'Huffman padding that is not EOS\'s high bits (§5.2)'],
      ['4084ffffffff', 'EOS in a Huffman string (§5.2)'],
      ['7f', 'an integer cut short (§5.1)'],
      ['7fffffffffff7f', 'an integer above 2^31 - 1'],
    ];
    for (const [hex, why] of forbidden) assert.throws(() => decodeAll(new HpackDecoder(), hex), CompressionError, why);
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 2_000; i += 1) {
      const block = Buffer.from(Array.from({ length: 1 + Math.floor(random() * 40) }, () => Math.floor(random() * 256)));
      try {
        new HpackDecoder().decode(block, () => undefined);
      } catch (error) {
        assert.ok(error instanceof CompressionError, `block ${block.toString('hex')}: ${String(error)}`);
      }
    }
  });

  it("decodes what nghttp2's encoder (node:http2's client) sends: 300 requests on one connection, its dynamic table evicting, Huffman and never-indexed fields", async function () {
    const received: Buffer[] = [];
    const capture = net.createServer((socket) => {
      socket.write(Buffer.concat([encodeFrame(FrameType.SETTINGS, 0, 0), encodeFrame(FrameType.SETTINGS, Flag.ACK, 0)]));
      socket.on('data', (chunk: Buffer) => received.push(chunk));
    });
    await new Promise<void>((resolve) => capture.listen(0, '127.0.0.1', resolve));
    const session = http2.connect(`http://127.0.0.1:${(capture.address() as net.AddressInfo).port}`);
    session.on('error', () => undefined);
    let seed = 11;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const text = (length: number) => Array.from({ length }, () => String.fromCharCode(0x20 + Math.floor(random() * 95))).join('').trim() || 'x';
    const sent: Fields[] = [];
    for (let i = 0; i < 300; i += 1) {
      const fields: Fields = [
        ['x-seq', String(i)],
        [`x-name-${i % 40}`, text([0, 1, 126, 127, 128, 200, 5_000][i % 7]!)],
        ['x-repeat', 'same value every time'],
        ['authorization', `Bearer ${text(30)}`],
      ];
      const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': `/p/${i}` };
      for (const [name, value] of fields) headers[name] = value;
      (headers as Record<symbol, unknown>)[http2.sensitiveHeaders] = ['authorization'];
      session.request(headers, { endStream: true }).on('error', () => undefined);
      sent.push(fields.map(([name, value]) => [name, value.trim()]));
    }
    const decoder = new HpackDecoder();
    const decoded: Fields[] = [];
    let input: Buffer = Buffer.alloc(0);
    let prefaceSkipped = false;
    let block: Buffer[] = [];
    while (decoded.length < sent.length) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      input = Buffer.concat([input, ...received.splice(0)]);
      if (!prefaceSkipped && input.length >= CLIENT_PREFACE.length) {
        input = input.subarray(CLIENT_PREFACE.length);
        prefaceSkipped = true;
      }
      if (!prefaceSkipped) continue;
      const { frames, rest } = readFrames(input);
      input = rest;
      for (const frame of frames) {
        if (frame.type !== FrameType.HEADERS && frame.type !== FrameType.CONTINUATION) continue;
        let fragment = frame.payload;
        if (frame.type === FrameType.HEADERS && frame.flags & Flag.PADDED) fragment = fragment.subarray(1, fragment.length - fragment[0]!);
        if (frame.type === FrameType.HEADERS && frame.flags & Flag.PRIORITY) fragment = fragment.subarray(5);
        block.push(fragment);
        if (!(frame.flags & Flag.END_HEADERS)) continue;
        const fields: Fields = [];
        decoder.decode(Buffer.concat(block), (name, value) => fields.push([name, value]));
        decoded.push(fields);
        block = [];
      }
    }
    session.destroy();
    capture.close();
    for (const [i, fields] of decoded.entries()) {
      assert.deepEqual(
        fields.filter(([name]) => !name.startsWith(':')),
        sent[i],
        `request ${i}`,
      );
      assert.deepEqual(fields.find(([name]) => name === ':path'), [':path', `/p/${i}`]);
    }
  });

  it('encodes literal blocks that decode to the same fields, :status 200 as static index 8', function () {
    const fields: Fields = [[':status', '415'], ['content-type', 'application/grpc+proto'], ['grpc-status', '13'], ['grpc-message', 'm'.repeat(300)], ['x-custom', 'v']];
    const decoded: Fields = [];
    new HpackDecoder().decode(encodeHeaderBlock(fields), (name, value) => decoded.push([name, value]));
    assert.deepEqual(decoded, fields);
    assert.deepEqual([...encodeHeaderBlock([[':status', '200']])], [0x88]);
  });
});

describe('authz HTTP/2: connections (RFC 9113)', function () {
  let server: GrpcServer;
  let port: number;
  const identity = (bytes: Buffer) => bytes;
  const ECHO = { path: '/test.Lean/Echo', requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity };
  /** Answers 200,000 bytes to any request: a large answer from a request under the message limit. */
  const LARGE = { ...ECHO, path: '/test.Lean/Large' };
  const largeAnswer = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
  /** Answers only when the test says so: a handler still at work (a Check waiting on Redis, or on a wake). */
  const SLOW = { ...ECHO, path: '/test.Lean/Slow' };
  let slowCallbacks: (() => void)[] = [];
  const echoHead = encodeHeaderBlock([[':method', 'POST'], [':scheme', 'http'], [':path', ECHO.path], [':authority', 'x'], ['content-type', 'application/grpc'], ['te', 'trailers']]);

  before(async function () {
    server = createGrpcServer();
    server.addService(
      { Echo: ECHO, Large: LARGE, Slow: SLOW },
      {
        Echo: (call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => callback(null, call.request),
        Large: (_call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => callback(null, largeAnswer),
        Slow: (call: UnaryCall<Buffer>, callback: GrpcCallback<Buffer>) => void slowCallbacks.push(() => callback(null, call.request)),
      },
    );
    ({ port } = await server.listen({ host: '127.0.0.1', port: 0 }));
  });
  after(function () {
    server.forceShutdown();
  });

  /** An Echo from node:http2's client; resolves with the answer's body, or the stream's error code. */
  function echo(session: http2.ClientHttp2Session, message: Buffer, extra: http2.OutgoingHttpHeaders = {}, path = ECHO.path): Promise<{ body: Buffer; grpcStatus?: string; resetCode?: number }> {
    return new Promise((resolve) => {
      const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...extra });
      const chunks: Buffer[] = [];
      let grpcStatus: string | undefined;
      // Trailers-Only (an error before any message) carries grpc-status in the response's headers.
      stream.on('response', (head) => (grpcStatus = head['grpc-status'] === undefined ? undefined : String(head['grpc-status'])));
      stream.on('trailers', (trailers) => (grpcStatus = String(trailers['grpc-status'])));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', () => undefined);
      stream.on('close', () => resolve({ body: Buffer.concat(chunks), grpcStatus, resetCode: stream.rstCode }));
      stream.end(frameMessage(message));
    });
  }

  it("waits for the peer's window and splits DATA at its frame size: a 200,000-byte answer to a client with a 16-byte stream window arrives whole", async function () {
    for (const settings of [{ initialWindowSize: 16 }, {}]) {
      const session = http2.connect(`http://127.0.0.1:${port}`, { settings });
      const answer = await echo(session, Buffer.from('large, please'), {}, LARGE.path);
      session.close();
      assert.equal(answer.grpcStatus, '0', JSON.stringify(settings));
      assert.ok(answer.body.subarray(5).equals(largeAnswer), `the answer arrives whole, with ${JSON.stringify(settings)}`);
    }
  });

  it('takes a request message of 64 KiB, and refuses one a byte longer with RESOURCE_EXHAUSTED (a Check is a few KiB)', async function () {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const largest = Buffer.alloc(64 << 10, 7);
    const taken = await echo(session, largest);
    const refused = await echo(session, Buffer.alloc((64 << 10) + 1, 7));
    session.close();
    assert.equal(taken.grpcStatus, '0');
    assert.ok(taken.body.subarray(5).equals(largest));
    assert.equal(refused.grpcStatus, '8', 'RESOURCE_EXHAUSTED');
  });

  it('ends a call at its grpc-timeout with DEADLINE_EXCEEDED while its handler still works, and drops the late answer', async function () {
    slowCallbacks = [];
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const answer = await echo(session, Buffer.from('slow'), { 'grpc-timeout': '50m' }, SLOW.path);
    assert.equal(answer.grpcStatus, '4', 'DEADLINE_EXCEEDED');
    assert.equal(slowCallbacks.length, 1, 'the handler ran and had not answered');
    slowCallbacks[0]!();
    const after = await echo(session, Buffer.from('next'));
    session.close();
    assert.equal(after.grpcStatus, '0', 'the connection goes on after the late answer is dropped');
    const invalid = await echo(http2.connect(`http://127.0.0.1:${port}`), Buffer.from('x'), { 'grpc-timeout': '123456789S' });
    assert.equal(invalid.grpcStatus, '13', 'a grpc-timeout of nine digits is refused (PROTOCOL-HTTP2.md: at most 8)');
  });

  it("holds a reset stream's slot until its handler answers: 100 reset while at work leave no room for a 101st until they finish", async function () {
    slowCallbacks = [];
    const slowHead = encodeHeaderBlock([[':method', 'POST'], [':scheme', 'http'], [':path', SLOW.path], [':authority', 'x'], ['content-type', 'application/grpc'], ['te', 'trailers']]);
    const socket = net.connect(port, '127.0.0.1');
    let input: Buffer = Buffer.alloc(0);
    const seen: { type: number; flags: number; streamId: number; payload: Buffer }[] = [];
    socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = readFrames(Buffer.concat([input, chunk]));
      input = rest;
      seen.push(...frames);
    });
    const call = (id: number) => [encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, id, slowHead), encodeFrame(FrameType.DATA, Flag.END_STREAM, id, frameMessage(Buffer.from('x')))];
    const ping = async (tag: string) => {
      socket.write(encodeFrame(FrameType.PING, 0, 0, Buffer.from(tag.padEnd(8))));
      while (!seen.some((frame) => frame.type === FrameType.PING && frame.payload.toString().trim() === tag)) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const resetCode = (id: number) => seen.find((frame) => frame.type === FrameType.RST_STREAM && frame.streamId === id)?.payload.readUInt32BE(0);
    socket.write(Buffer.concat([CLIENT_PREFACE, encodeFrame(FrameType.SETTINGS, 0, 0)]));
    const ids = Array.from({ length: 100 }, (_, i) => 1 + 2 * i);
    socket.write(Buffer.concat(ids.flatMap((id) => [...call(id), encodeFrame(FrameType.RST_STREAM, 0, id, words(ErrorCode.CANCEL))])));
    await ping('reset');
    assert.equal(slowCallbacks.length, 100, 'every handler started');
    socket.write(Buffer.concat(call(201)));
    await ping('crowded');
    assert.equal(resetCode(201), ErrorCode.REFUSED_STREAM, 'the 101st stream is refused while 100 handlers work for reset streams');
    for (const answer of slowCallbacks.splice(0)) answer();
    socket.write(Buffer.concat(call(203)));
    await ping('room');
    assert.equal(slowCallbacks.length, 1, 'once they answer, a new stream is taken');
    assert.equal(seen.filter((frame) => frame.type === FrameType.HEADERS && frame.streamId <= 199).length, 0, 'nothing was sent on the reset streams');
    slowCallbacks[0]!();
    socket.destroy();
  });

  it("reads a header block continued over CONTINUATION frames from nghttp2 (a 30,000-byte header)", async function () {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const long = await echo(session, Buffer.from('a'), { 'x-long': 'v'.repeat(30_000) });
    session.close();
    assert.equal(long.grpcStatus, '0');
    assert.equal(long.body.subarray(5).toString(), 'a');
  });

  /** Raw frames after the preface and an empty SETTINGS; resolves with every frame the server sent until it closed. */
  async function raw(frames: Buffer[], options: { preface?: Buffer; until?: (frame: { type: number; flags: number; streamId: number; payload: Buffer }) => boolean } = {}) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    let input: Buffer = Buffer.alloc(0);
    const seen: { type: number; flags: number; streamId: number; payload: Buffer }[] = [];
    const done = new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        const { frames: complete, rest } = readFrames(Buffer.concat([input, chunk]));
        input = rest;
        seen.push(...complete);
        if (options.until && complete.some(options.until)) resolve();
      });
      socket.on('close', () => resolve());
    });
    socket.write(Buffer.concat([options.preface ?? Buffer.concat([CLIENT_PREFACE, encodeFrame(FrameType.SETTINGS, 0, 0)]), ...frames]));
    await done;
    socket.destroy();
    return seen;
  }
  const goAwayCode = (frames: { type: number; payload: Buffer }[]) => frames.find((frame) => frame.type === FrameType.GOAWAY)?.payload.readUInt32BE(4);

  it('ends the connection with GOAWAY and the RFC\'s error code for what a peer must not send', async function () {
    const cases: [string, Buffer[], number][] = [
      ['a frame above SETTINGS_MAX_FRAME_SIZE (§4.2)', [Buffer.from([0x00, 0x4e, 0x20, FrameType.PING, 0, 0, 0, 0, 0])], ErrorCode.FRAME_SIZE_ERROR],
      ['DATA on an idle stream (§5.1)', [encodeFrame(FrameType.DATA, 0, 1, Buffer.from('x'))], ErrorCode.PROTOCOL_ERROR],
      ['a stream opened with an even id (§5.1.1)', [encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, 2, echoHead)], ErrorCode.PROTOCOL_ERROR],
      ['a header block that cannot be decoded (§4.3)', [encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0x80]))], ErrorCode.COMPRESSION_ERROR],
      ['a frame inside a header block (§6.10)', [encodeFrame(FrameType.HEADERS, 0, 1, echoHead), encodeFrame(FrameType.PING, 0, 0, Buffer.alloc(8))], ErrorCode.PROTOCOL_ERROR],
      ['a WINDOW_UPDATE of 0 on the connection (§6.9)', [encodeFrame(FrameType.WINDOW_UPDATE, 0, 0, words(0))], ErrorCode.PROTOCOL_ERROR],
      ['PUSH_PROMISE from a client (§8.4)', [encodeFrame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, 1, Buffer.alloc(4))], ErrorCode.PROTOCOL_ERROR],
      ['SETTINGS_MAX_FRAME_SIZE below 16,384 (§6.5.2)', [encodeFrame(FrameType.SETTINGS, 0, 0, settingsPayload([[Setting.MAX_FRAME_SIZE, 100]]))], ErrorCode.PROTOCOL_ERROR],
      ['SETTINGS_INITIAL_WINDOW_SIZE above 2^31 - 1 (§6.5.2)', [encodeFrame(FrameType.SETTINGS, 0, 0, settingsPayload([[Setting.INITIAL_WINDOW_SIZE, 2 ** 31]]))], ErrorCode.FLOW_CONTROL_ERROR],
      ['a PING of 7 bytes (§6.7)', [encodeFrame(FrameType.PING, 0, 0, Buffer.alloc(7))], ErrorCode.FRAME_SIZE_ERROR],
    ];
    for (const [what, frames, code] of cases) assert.equal(goAwayCode(await raw(frames)), code, what);
    const first = await raw([], { preface: Buffer.concat([CLIENT_PREFACE, encodeFrame(FrameType.PING, 0, 0, Buffer.alloc(8))]) });
    assert.equal(goAwayCode(first), ErrorCode.PROTOCOL_ERROR, 'a first frame that is not SETTINGS (§3.4)');
    // The server's preface (SETTINGS, WINDOW_UPDATE) leaves before the client's is read (§3.4).
    const notHttp2 = await raw([], { preface: Buffer.from('GET / HTTP/1.1\r\nhost: x\r\n\r\n') });
    assert.deepEqual(notHttp2.map((frame) => frame.type), [FrameType.SETTINGS, FrameType.WINDOW_UPDATE], 'HTTP/1.1 gets the connection closed and no answer');
  });

  it('ignores unknown frame types, answers PING, refuses the 101st open stream, ends a rapid reset with ENHANCE_YOUR_CALM, and resets a stream with a header list above 64 KiB or an uppercase name, answering an Echo after each', async function () {
    const ping = Buffer.from('12345678');
    const pong = await raw([encodeFrame(0xfa, 0, 0, Buffer.from('unknown')), encodeFrame(FrameType.PING, 0, 0, ping)], { until: (frame) => frame.type === FrameType.PING });
    assert.ok(pong.some((frame) => frame.type === FrameType.PING && frame.flags & Flag.ACK && frame.payload.equals(ping)), 'PING answered with ACK and its payload (§6.7)');

    const echoAfter = (lastId: number) => [
      encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, lastId, echoHead),
      encodeFrame(FrameType.DATA, Flag.END_STREAM, lastId, frameMessage(Buffer.from('still here'))),
    ];
    const answered = (frames: { type: number; flags: number; streamId: number }[], id: number) => frames.some((frame) => frame.streamId === id && frame.type === FrameType.HEADERS && frame.flags & Flag.END_STREAM);

    const open = Array.from({ length: 101 }, (_, i) => encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, 1 + 2 * i, echoHead));
    const refusedId = 1 + 2 * 100;
    const crowded = await raw([...open, encodeFrame(FrameType.PING, 0, 0, ping)], { until: (frame) => frame.type === FrameType.PING });
    const refusal = crowded.find((frame) => frame.type === FrameType.RST_STREAM && frame.streamId === refusedId);
    assert.equal(refusal?.payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM, 'the 101st stream is refused (SETTINGS_MAX_CONCURRENT_STREAMS 100)');
    assert.equal(crowded.filter((frame) => frame.type === FrameType.RST_STREAM).length, 1, 'the first 100 stay open');

    // CVE-2023-44487: past 1,000 resets in a second the connection ends, as nghttp2's and Go's do.
    const resets = Array.from({ length: 3_000 }, (_, i) => [
      encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, 1 + 2 * i, echoHead),
      encodeFrame(FrameType.RST_STREAM, 0, 1 + 2 * i, words(ErrorCode.CANCEL)),
    ]).flat();
    const afterResets = await raw(resets);
    assert.equal(goAwayCode(afterResets), ErrorCode.ENHANCE_YOUR_CALM, '3,000 streams opened and reset at once end the connection');
    const nextConnection = await raw(echoAfter(1), { until: (frame) => frame.streamId === 1 && frame.type === FrameType.HEADERS && (frame.flags & Flag.END_STREAM) !== 0 });
    assert.ok(answered(nextConnection, 1), 'an Echo on the next connection is answered');

    // A header list above the advertised SETTINGS_MAX_HEADER_LIST_SIZE (64 KiB) from a block of 3 KiB:
    // one 3,000-byte field entered in the dynamic table (RFC 7541 §6.2.1), then named 22 more times by its index.
    const entry = Buffer.concat([Buffer.from([0x40, 5]), Buffer.from('x-big'), Buffer.from([0x7f, 0xb9, 0x16]), Buffer.alloc(3_000, 0x76)]);
    const huge = Buffer.concat([encodeHeaderBlock([[':method', 'POST'], [':scheme', 'http'], [':path', ECHO.path], [':authority', 'x'], ['content-type', 'application/grpc']]), entry, Buffer.alloc(22, 0xbe)]);
    const hugeFrames = [encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, 1, huge)];
    const afterHuge = await raw([...hugeFrames, ...echoAfter(3)], { until: (frame) => frame.streamId === 3 && frame.type === FrameType.HEADERS && (frame.flags & Flag.END_STREAM) !== 0 });
    assert.equal(afterHuge.find((frame) => frame.type === FrameType.RST_STREAM && frame.streamId === 1)?.payload.readUInt32BE(0), ErrorCode.PROTOCOL_ERROR, 'a header list above 64 KiB resets its stream');
    assert.ok(answered(afterHuge, 3), 'and the next stream is answered');

    const uppercase = encodeHeaderBlock([[':method', 'POST'], [':scheme', 'http'], [':path', ECHO.path], [':authority', 'x'], ['content-type', 'application/grpc'], ['X-Bad', '1']]);
    const afterMalformed = await raw([encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, 1, uppercase), ...echoAfter(3)], { until: (frame) => frame.streamId === 3 && frame.type === FrameType.HEADERS && (frame.flags & Flag.END_STREAM) !== 0 });
    assert.equal(afterMalformed.find((frame) => frame.type === FrameType.RST_STREAM && frame.streamId === 1)?.payload.readUInt32BE(0), ErrorCode.PROTOCOL_ERROR, 'an uppercase field name resets its stream (§8.2.1)');
    assert.ok(answered(afterMalformed, 3), 'and the next stream is answered');
  });
});
