import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { formatAnthropic, formatGoogle, formatOpenAi, type WireFormat } from './provider-wire.js';

export type FakeProviderName = 'openai' | 'anthropic' | 'google';

export interface ToolCallReply {
  name: string;
  args: Record<string, unknown>;
}

/** What the fake answers to one request, in the wire format of whichever provider was called. */
export type ScriptedReply = (
  | { text: string }
  | { toolCalls: ToolCallReply[]; text?: string }
  | { status: number; retryAfterMs?: number }
) & {
  /** Hold the answer back this long, e.g. to keep a request in flight; a function is asked afresh for each answer. */
  delayMs?: number | (() => number);
  /** Hold the answer back until this settles, to order it against other requests without timing. */
  until?: Promise<unknown>;
};

export interface RecordedRequest {
  provider: FakeProviderName;
  path: string;
  headers: IncomingHttpHeaders;
  // Parsed JSON bodies of three different APIs; tests read the fields they know.
  body: any;
  stream: boolean;
  /** Who called: each container has an address of its own, so a test tells replicas apart by it. */
  remoteAddress: string | undefined;
}

const FORMATS: Record<FakeProviderName, WireFormat> = {
  openai: formatOpenAi,
  anthropic: formatAnthropic,
  google: formatGoogle,
};

// Each API's own way of sending the key; a request without it is refused with 401 as the real API would.
const KEY_HEADER: Record<FakeProviderName, string> = {
  openai: 'authorization',
  anthropic: 'x-api-key',
  google: 'x-goog-api-key',
};

/**
 * A stand-in for the three model providers, speaking their real HTTP APIs
 * (OpenAI Chat Completions, Anthropic Messages, Gemini generateContent, each
 * with and without SSE streaming). It answers from a script, then with a
 * plain default text, and records every request it gets.
 */
export class FakeProvider {
  readonly requests: RecordedRequest[] = [];
  defaultReply: ScriptedReply = { text: 'default answer' };
  /** Off for load tests, which would otherwise hold every request in memory. */
  recording = true;
  private readonly script: ScriptedReply[] = [];
  private readonly waiters: Array<() => void> = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on 0.0.0.0 so that containers reach it through host.containers.internal. */
  static async start(): Promise<FakeProvider> {
    let fake: FakeProvider | undefined;
    const server = createServer((request, response) => void fake?.handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    fake = new FakeProvider(server, (server.address() as AddressInfo).port);
    return fake;
  }

  /** The base URL to give the runtime (OPENAI_BASE_URL and the others), as seen from `host`. */
  baseUrl(provider: FakeProviderName, host = '127.0.0.1'): string {
    const root = `http://${host}:${this.port}`;
    return provider === 'google' ? `${root}/v1beta` : `${root}/v1`;
  }

  /** Queues replies, answered in order to the next requests of any provider. */
  reply(...replies: ScriptedReply[]): void {
    this.script.push(...replies);
  }

  /** Resolves once `count` requests in total have arrived. */
  async receivedRequests(count: number): Promise<void> {
    while (this.requests.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  reset(): void {
    this.requests.length = 0;
    this.script.length = 0;
    this.defaultReply = { text: 'default answer' };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const route = routeOf(request.method ?? '', url.pathname);
    if (route === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such endpoint"}}');
      return;
    }
    const body = JSON.parse(await readText(request)) as any;
    const stream = route.provider === 'google' ? route.action === 'streamGenerateContent' : body.stream === true;
    if (this.recording) {
      this.requests.push({ provider: route.provider, path: url.pathname, headers: request.headers, body, stream, remoteAddress: request.socket.remoteAddress });
      this.waiters.splice(0).forEach((wake) => wake());
    }

    const reply = request.headers[KEY_HEADER[route.provider]] ? this.script.shift() ?? this.defaultReply : { status: 401 };
    const delayMs = typeof reply.delayMs === 'function' ? reply.delayMs() : reply.delayMs;
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (reply.until) await reply.until;
    const format = FORMATS[route.provider];
    const model = route.model ?? body.model ?? 'model';

    if ('status' in reply) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (reply.retryAfterMs !== undefined) headers['retry-after-ms'] = String(reply.retryAfterMs);
      response.writeHead(reply.status, headers).end(JSON.stringify(format.error(reply.status)));
      return;
    }
    const answer = { text: reply.text ?? '', toolCalls: 'toolCalls' in reply ? reply.toolCalls : [] };
    if (!stream) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(format.message(answer, model)));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of format.events(answer, model)) response.write(event);
    response.end();
  }
}

function routeOf(method: string, path: string): { provider: FakeProviderName; model?: string; action?: string } | undefined {
  if (method !== 'POST') return undefined;
  if (path === '/v1/chat/completions') return { provider: 'openai' };
  if (path === '/v1/messages') return { provider: 'anthropic' };
  const gemini = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
  if (gemini) return { provider: 'google', model: gemini[1], action: gemini[2] };
  return undefined;
}

async function readText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}
