import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/** A TCP client of 127.0.0.1:`port` whose every outcome (bytes read, close) is recorded. */
export interface RawClient {
  socket: Socket;
  /** Everything the server sent. */
  received(): string;
  /** Resolves when the server (or an error) closes the socket; never when the test does. */
  closed: Promise<void>;
}

export async function openRawClient(port: number, localAddress = '127.0.0.1'): Promise<RawClient> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = once(socket, 'close').then(() => undefined);
  await once(socket, 'connect');
  return { socket, received: () => text, closed };
}

/**
 * A slowloris: sends a request's headers one byte every `everyMs` and never finishes
 * them. Returns once the server has closed the connection, with what it answered.
 */
export async function trickleHeadersUntilClosed(port: number, everyMs: number, localAddress?: string): Promise<string> {
  const client = await openRawClient(port, localAddress);
  const endless = `GET / HTTP/1.1\r\nHost: slow.example\r\nX-Slow: ${'a'.repeat(100_000)}`;
  let sent = 0;
  const timer = setInterval(() => {
    if (!client.socket.destroyed) client.socket.write(endless[sent++ % endless.length]!);
  }, everyMs);
  try {
    await client.closed;
    return client.received();
  } finally {
    clearInterval(timer);
  }
}

/** Sends `request` verbatim and returns the whole answer once the server closes the connection. */
export async function rawExchange(port: number, request: string): Promise<string> {
  const client = await openRawClient(port);
  client.socket.write(request);
  await client.closed;
  return client.received();
}
