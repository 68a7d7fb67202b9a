import assert from 'node:assert/strict';
import { once } from 'node:events';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { openRawClient, rawExchange, trickleHeadersUntilClosed } from './support/slow-client.js';
import { LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';

/**
 * Issue 31 item 7, with raw TCP against the local edge: what Node's HTTP parser refuses,
 * and a request past the headers deadline, get a plain-text answer with an X-Request-Id
 * and `Connection: close`, as the edge's other answers are plain text, instead of Node's
 * empty one; the connection is then closed. None of them reaches authz.
 */
describe('local edge: answers to requests the HTTP parser refuses', () => {
  const HEADERS_TIMEOUT_MS = 1_000;
  let edge: RunningLocalEdge;
  let checks = 0;

  before(async () => {
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS,
      port: 0,
      authzAddress: 'unix:/nonexistent/authz.sock',
      // Counts what would have been checked; failing, so a request that gets this far is a 503.
      authzClient: {
        check: async () => {
          checks += 1;
          throw new Error('no authz in this test');
        },
        close: () => undefined,
      },
      clientLimits: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 5_000 },
    });
  });
  after(async () => edge?.close());

  interface Answer {
    status: number;
    headers: Record<string, string>;
    body: string;
  }

  function parse(text: string): Answer {
    const end = text.indexOf('\r\n\r\n');
    assert.ok(end > 0, `not an HTTP answer: ${JSON.stringify(text)}`);
    const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)?.[1]), headers, body: text.slice(end + 4) };
  }

  /** What every parser answer holds: plain text whose length is declared, a request id, and the close. */
  function assertPlainAnswer(answer: Answer, status: number, body: RegExp): void {
    assert.equal(answer.status, status, JSON.stringify(answer));
    assert.equal(answer.headers['content-type'], 'text/plain');
    assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.body));
    assert.match(answer.headers['x-request-id'] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(answer.headers.connection, 'close');
    assert.match(answer.body, body);
    assert.ok(answer.body.endsWith('\n'));
  }

  it('answers 431 to headers past the parser\'s limit', async () => {
    const answer = await rawExchange(edge.port, `GET / HTTP/1.1\r\nHost: parser.example\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertPlainAnswer(parse(answer), 431, /^request header fields too large: /);
  });

  it('answers 400 to a request with both Content-Length and Transfer-Encoding', async () => {
    const answer = await rawExchange(edge.port, 'POST / HTTP/1.1\r\nHost: parser.example\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    assertPlainAnswer(parse(answer), 400, /^bad request: not a valid HTTP\/1\.1 request \(HPE_[A-Z_]+\)\n$/);
  });

  it('answers 400 to a method the parser does not know, and to a request line that is not HTTP', async () => {
    for (const request of ['BREW / HTTP/1.1\r\nHost: parser.example\r\n\r\n', 'GET / HTTP/1.1 extra\r\nHost: parser.example\r\n\r\n', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03']) {
      const answer = await rawExchange(edge.port, request);
      assertPlainAnswer(parse(answer), 400, /^bad request: not a valid HTTP\/1\.1 request \(HPE_[A-Z_]+\)\n$/);
    }
  });

  it('gives each answer its own request id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 3; i += 1) ids.add(parse(await rawExchange(edge.port, 'BREW / HTTP/1.1\r\n\r\n')).headers['x-request-id']!);
    assert.equal(ids.size, 3);
  });

  it('still answers a bad request that follows an answered one on the same connection', async () => {
    const client = await openRawClient(edge.port);
    client.socket.write('GET / HTTP/1.1\r\nHost: parser.example\r\n\r\n');
    while (!/\r\n\r\n[\s\S]*\n$/.test(client.received())) await once(client.socket, 'data');
    const first = client.received();
    assert.match(first, /^HTTP\/1\.1 503 /, 'the first request reached the (failing) authz');
    client.socket.write('BREW / HTTP/1.1\r\nHost: parser.example\r\n\r\n');
    await client.closed;
    assertPlainAnswer(parse(client.received().slice(first.length)), 400, /^bad request: /);
  });

  it('keeps answering 408 to headers that do not complete in time, now in plain text with a request id', async function () {
    this.timeout(HEADERS_TIMEOUT_MS + 5_000);
    const answer = await trickleHeadersUntilClosed(edge.port, 100);
    assertPlainAnswer(parse(answer), 408, /^request timeout: /);
  });

  it('sent none of these to authz but the one well-formed request', () => {
    assert.equal(checks, 1);
  });
});
