import type { IncomingMessage } from 'node:http';

/**
 * The status recorded, never sent, for a request the client abandoned before it was
 * answered: nginx's 499 "client closed request". The client is gone, so nothing can be
 * sent; logs and metrics keep it apart from the server's own failures (issue 31 item 5).
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Whether `caught` is the request's own abort: Node destroys an IncomingMessage whose
 * connection closed before its body was complete with an `aborted` ECONNRESET
 * (lib/_http_server.js abortIncoming), which a reader of the body then throws. An error
 * of anything else (a database socket's ECONNRESET, say) is not the client's doing.
 */
export function isClientAbort(caught: unknown, request: IncomingMessage): boolean {
  return caught instanceof Error && request.readableAborted && request.errored === caught;
}
