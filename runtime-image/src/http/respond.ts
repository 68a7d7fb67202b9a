import type { ServerResponse } from 'node:http';

/** What one request learned along the way, for its log line. */
export interface RequestContext {
  sessionId?: string;
  /** The trace id of a traced invoke: its request line names it as the invoke's other lines do. */
  traceId?: string;
  /** An error that was answered inside a stream, so its status line stayed 200. */
  failure?: unknown;
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(payload);
}
