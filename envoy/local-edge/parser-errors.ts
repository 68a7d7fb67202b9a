import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What the edge answers to a request Node's HTTP parser refused, or to one past the
 * slow-client deadlines (control/http/client-limits.ts), by the error's code: Node's own
 * statuses (lib/_http_server.js, socketOnError), in the edge's plain text. The body never
 * echoes what the client sent; llhttp's code says which rule it broke. Pure.
 */
export function parserErrorAnswer(code: string | undefined): { status: number; body: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, body: "request header fields too large: the request line and headers pass the edge's limit\n" };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, body: "payload too large: the chunk extensions pass the edge's limit\n" };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, body: 'request timeout: the request was not complete in time\n' };
    default:
      return { status: 400, body: `bad request: not a valid HTTP/1.1 request${code?.startsWith('HPE_') ? ` (${code})` : ''}\n` };
  }
}

/** The raw bytes of a plain-text answer that closes its connection. Pure. */
export function plainAnswerBytes(status: number, body: string, requestId: string): string {
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n` +
    `content-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`
  );
}

/**
 * Answers `server`'s client errors (issue 31 item 7) instead of Node, whose answers have
 * no body and no request id: a plain-text answer with an X-Request-Id, then the socket
 * is destroyed, as the parser cannot read on. Nothing is written to a socket the peer
 * closed, or in the middle of an answer already started on it (Node's own rule: the
 * in-flight response is the socket's `_httpMessage`, set while one is being written).
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } | null })._httpMessage;
    if (error.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
      const { status, body } = parserErrorAnswer(error.code);
      socket.write(plainAnswerBytes(status, body, randomUUID()));
    }
    socket.destroy();
  });
}
