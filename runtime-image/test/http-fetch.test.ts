import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { HttpFetch, providerFetchFor } from '../src/http-fetch.js';

type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void;

/** A real server on a free port whose answers `handler` writes; each request's head and body are kept. */
async function startServer(handler: Handler) {
  const received: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    received.push({ method: request.method!, url: request.url!, headers: request.headers, body });
    handler(request, body, response);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

const closeServer = (server: Server) => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
};

/** A port that was just free: listened on, then closed, so a connect is refused. */
async function refusedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the provider fetch over node:http (HttpFetch)', () => {
  let httpFetch: HttpFetch;
  let server: Server | undefined;
  beforeEach(() => {
    httpFetch = new HttpFetch();
  });
  afterEach(async () => {
    httpFetch.close();
    if (server) await closeServer(server);
    server = undefined;
  });

  it('sends the method, headers and JSON body, and answers with the status, headers and body', async () => {
    const target = await startServer((_request, body, response) => {
      response.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-request-id': 'req-1' }).end(JSON.stringify({ echoed: JSON.parse(body) }));
    });
    server = target.server;
    const response = await httpFetch.fetch(`${target.url}/v1/chat/completions?x=1`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-test' },
      body: JSON.stringify({ text: 'héllo' }),
    });

    assert.equal(response.status, 201);
    assert.equal(response.statusText, 'Made');
    assert.equal(response.ok, true);
    assert.equal(response.headers.get('x-request-id'), 'req-1');
    assert.deepEqual(await response.json(), { echoed: { text: 'héllo' } });
    const [request] = target.received;
    assert.equal(request!.method, 'POST');
    assert.equal(request!.url, '/v1/chat/completions?x=1');
    assert.equal(request!.headers.authorization, 'Bearer sk-test');
    assert.equal(request!.headers['content-length'], String(Buffer.byteLength(JSON.stringify({ text: 'héllo' }))), 'the length in bytes, not characters');
  });

  it('keeps the connection for the next call', async () => {
    const target = await startServer((request, _body, response) => response.end(String(request.socket.remotePort)));
    server = target.server;
    const first = await (await httpFetch.fetch(target.url)).text();
    const second = await (await httpFetch.fetch(target.url)).text();
    assert.equal(second, first, 'both calls came from one client port');
  });

  it('streams the body as it arrives, as a server-sent event stream is read', async () => {
    let sendRest!: () => void;
    const target = await startServer((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: one\n\n');
      sendRest = () => response.end('data: two\n\n');
    });
    server = target.server;
    const response = await httpFetch.fetch(target.url, { method: 'POST', body: '{}' });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();

    assert.equal((await reader.read()).value, 'data: one\n\n', 'the first event before the server has sent the second');
    sendRest();
    assert.equal((await reader.read()).value, 'data: two\n\n');
    assert.equal((await reader.read()).done, true);
  });

  it('decodes a gzip, deflate or br body as fetch does, and asks for none', async () => {
    const encoders = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };
    const target = await startServer((request, _body, response) => {
      const encoding = request.url!.slice(1) as keyof typeof encoders;
      response.writeHead(200, { 'content-encoding': encoding }).end(encoders[encoding](Buffer.from(`text sent as ${encoding}`)));
    });
    server = target.server;
    for (const encoding of Object.keys(encoders)) {
      assert.equal(await (await httpFetch.fetch(`${target.url}/${encoding}`)).text(), `text sent as ${encoding}`);
    }
    assert.ok(target.received.every((request) => request.headers['accept-encoding'] === undefined));
  });

  it('rejects a corrupt gzip body when it is read, as a failed body', async () => {
    const target = await startServer((_request, _body, response) => response.writeHead(200, { 'content-encoding': 'gzip' }).end('not gzip at all'));
    server = target.server;
    const response = await httpFetch.fetch(target.url);
    await assert.rejects(response.text());
  });

  it('answers a 204 with no body, and an error status with its body', async () => {
    const target = await startServer((request, _body, response) => {
      if (request.url === '/empty') response.writeHead(204).end();
      else response.writeHead(429, { 'retry-after': '3' }).end('{"error":{"message":"slow down"}}');
    });
    server = target.server;
    const empty = await httpFetch.fetch(`${target.url}/empty`, { method: 'DELETE' });
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);

    const limited = await httpFetch.fetch(`${target.url}/limited`);
    assert.equal(limited.ok, false);
    assert.equal(limited.headers.get('retry-after'), '3');
    assert.equal(await limited.text(), '{"error":{"message":"slow down"}}');
  });

  it('fails a refused connection as undici does: TypeError "fetch failed" with the system error as its cause', async () => {
    const port = await refusedPort();
    const error = await httpFetch.fetch(`http://127.0.0.1:${port}/v1`, { method: 'POST', body: '{}' }).then(
      () => assert.fail('a refused connection answered'),
      (failure: unknown) => failure,
    );
    assert.ok(error instanceof TypeError);
    assert.equal(error.message, 'fetch failed');
    assert.equal((error.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');

    const undiciError = await globalThis.fetch(`http://127.0.0.1:${port}/v1`).catch((failure: unknown) => failure);
    assert.ok(undiciError instanceof TypeError, 'undici fails it the same way');
    assert.equal(undiciError.message, error.message);
  });

  it('sends a request again, once and on a new connection, when the server closed the kept connection as it went out', async () => {
    const served = new Map<unknown, number>();
    const target = await startServer((request, _body, response) => {
      const count = (served.get(request.socket) ?? 0) + 1;
      served.set(request.socket, count);
      // The second request on a kept connection meets the server closing it (its idle timeout).
      if (count === 2) request.socket.destroy();
      else response.end(`answer ${target.received.length}`);
    });
    server = target.server;
    assert.equal(await (await httpFetch.fetch(target.url, { method: 'POST', body: '{"turn":1}' })).text(), 'answer 1');

    const second = await httpFetch.fetch(target.url, { method: 'POST', body: '{"turn":2}' });
    assert.equal(await second.text(), 'answer 3');
    assert.deepEqual(target.received.map((request) => request.body), ['{"turn":1}', '{"turn":2}', '{"turn":2}']);
    assert.equal(served.size, 2, 'the second try went on a connection of its own');
  });

  it('does not send again a request whose new connection was reset: that server is failing, not idle', async () => {
    const target = await startServer((request) => request.socket.destroy());
    server = target.server;
    const error = await httpFetch.fetch(target.url, { method: 'POST', body: '{}' }).catch((failure: unknown) => failure);
    assert.ok(error instanceof TypeError && error.message === 'fetch failed', String(error));
    assert.equal((error.cause as NodeJS.ErrnoException).code, 'ECONNRESET');
    assert.equal(target.received.length, 1);
  });

  it('rejects with the signal’s reason when aborted before the answer, and closes the request', async () => {
    let closed!: Promise<unknown>;
    const target = await startServer((request) => {
      closed = once(request.socket, 'close'); // never answered
    });
    server = target.server;
    const deadline = AbortSignal.timeout(100);
    const error = await httpFetch.fetch(target.url, { signal: deadline }).catch((failure: unknown) => failure);
    assert.ok(error instanceof Error);
    assert.equal(error.name, 'TimeoutError', 'the deadline’s reason, which provider-failure.ts reports as a timeout');
    await closed;
  });

  it('rejects at once when the signal was already aborted, sending nothing', async () => {
    const target = await startServer((_request, _body, response) => response.end('ok'));
    server = target.server;
    const controller = new AbortController();
    controller.abort(new Error('stopped by the caller'));
    await assert.rejects(httpFetch.fetch(target.url, { signal: controller.signal }), /stopped by the caller/);
    assert.equal(target.received.length, 0);
  });

  it('errors the body with the signal’s reason when aborted while the body is read', async () => {
    const target = await startServer((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: one\n\n'); // and the rest never comes
    });
    server = target.server;
    const controller = new AbortController();
    const response = await httpFetch.fetch(target.url, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    const pending = reader.read();
    controller.abort(new DOMException('the invoke ended', 'AbortError'));
    await assert.rejects(pending, { name: 'AbortError', message: 'the invoke ended' });
  });

  it('hands a redirect to the global fetch, which follows it', async () => {
    const target = await startServer((request, _body, response) => {
      if (request.url === '/old') response.writeHead(307, { location: '/new' }).end();
      else response.end(`moved, ${request.method}`);
    });
    server = target.server;
    const response = await httpFetch.fetch(`${target.url}/old`, { method: 'POST', body: '{}' });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'moved, POST');
    assert.deepEqual(
      target.received.map((request) => request.url),
      ['/old', '/old', '/new'],
      'the first answer is dropped, and the global fetch asks again and follows',
    );
  });

  it('hands what it does not send itself to the fallback: a Request, a stream body, another scheme', async () => {
    const handed: unknown[] = [];
    const fallback = (async (input: unknown) => {
      handed.push(input);
      return new Response('from the fallback');
    }) as typeof globalThis.fetch;
    const withFallback = new HttpFetch(fallback);
    try {
      const request = new Request('http://127.0.0.1:1/');
      await withFallback.fetch(request);
      await withFallback.fetch('http://127.0.0.1:1/', { method: 'POST', body: new Blob(['x']) });
      await withFallback.fetch('data:text/plain,hello');
      assert.deepEqual(handed, [request, 'http://127.0.0.1:1/', 'data:text/plain,hello']);
    } finally {
      withFallback.close();
    }
  });

  describe('over https', () => {
    let dir: string;
    let secure: Server;
    let url: string;
    before(async () => {
      // A certificate for 127.0.0.1 that no CA of Node's signed.
      dir = mkdtempSync(join(tmpdir(), 'http-fetch-tls-'));
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      secure = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_request, response) => response.end('over tls'));
      secure.listen(0, '127.0.0.1');
      await once(secure, 'listening');
      url = `https://127.0.0.1:${(secure.address() as AddressInfo).port}/`;
    });
    after(async () => {
      await closeServer(secure);
      rmSync(dir, { recursive: true, force: true });
    });

    it('refuses a certificate no trusted CA signed, as undici does', async () => {
      const error = await httpFetch.fetch(url).catch((failure: unknown) => failure);
      assert.ok(error instanceof TypeError && error.message === 'fetch failed', String(error));
      assert.equal((error.cause as NodeJS.ErrnoException).code, 'DEPTH_ZERO_SELF_SIGNED_CERT');
      await assert.rejects(globalThis.fetch(url), { name: 'TypeError', message: 'fetch failed' });
    });

    it('trusts what NODE_EXTRA_CA_CERTS adds, as a base URL at a gateway with an in-house CA needs', async () => {
      const module = fileURLToPath(new URL('../src/http-fetch.ts', import.meta.url));
      const script = `const { HttpFetch } = await import(${JSON.stringify(module)}); const f = new HttpFetch(); const r = await f.fetch(${JSON.stringify(url)}); console.log(r.status, await r.text()); f.close();`;
      // Not execFileSync: the server answering it runs in this process.
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
      });
      assert.equal(stdout.trim(), '200 over tls');
    });
  });

  describe('which fetch the runtime gives the provider (providerFetchFor)', () => {
    it('is the global fetch when Node is told to use the environment’s proxy, which only the global fetch honours', () => {
      assert.equal(providerFetchFor({ NODE_USE_ENV_PROXY: '1', HTTPS_PROXY: 'http://proxy:3128' }, []).fetch, globalThis.fetch);
      assert.equal(providerFetchFor({}, ['--use-env-proxy']).fetch, globalThis.fetch);
      assert.equal(providerFetchFor({ NODE_OPTIONS: '--max-old-space-size=400 --use-env-proxy' }, []).fetch, globalThis.fetch);
    });

    it('is HttpFetch otherwise', () => {
      const chosen = providerFetchFor({ HTTPS_PROXY: 'http://proxy:3128' }, ['--enable-source-maps']);
      try {
        assert.notEqual(chosen.fetch, globalThis.fetch, 'HTTPS_PROXY alone does not make the global fetch use a proxy either');
      } finally {
        chosen.close();
      }
    });
  });
});
