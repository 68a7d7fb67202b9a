import { Agent, type AgentOptions } from 'node:http';
import { Socket, type NetConnectOpts } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * A socket to a replica that outlives a failed write. An agent may answer before the
 * upload ends (413, 401) and close; the edge's next body chunk then fails with EPIPE or
 * ECONNRESET while the answer still waits, readable, in the kernel. A plain socket is
 * destroyed on that write error, the answer is never read and the caller gets a 502;
 * Envoy relays it. Here the upload simply stops (its write never completes, so the
 * caller is back-pressured) and the answer is read to its end; any other error, and any
 * read error, destroys the socket as usual.
 */
class UploadTolerantSocket extends Socket {
  override _write(chunk: unknown, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    super._write(chunk, encoding, tolerateFailedUpload(callback));
  }

  override _writev(chunks: { chunk: unknown; encoding: BufferEncoding }[], callback: (error?: Error | null) => void): void {
    super._writev!(chunks, tolerateFailedUpload(callback));
  }
}

/** Never completes a write the replica refused, so the socket stays open for reading. */
function tolerateFailedUpload(callback: (error?: Error | null) => void): (error?: Error | null) => void {
  return (error) => {
    const code = (error as NodeJS.ErrnoException | null | undefined)?.code;
    if (code === 'EPIPE' || code === 'ECONNRESET') return;
    callback(error);
  };
}

/** A keep-alive Agent whose sockets are UploadTolerantSockets. */
export function createUpstreamAgent(options: AgentOptions): Agent {
  const agent = new Agent(options);
  (agent as unknown as { createConnection: (options: NetConnectOpts, callback?: () => void) => Duplex }).createConnection = (connectOptions) => {
    const socket = new UploadTolerantSocket();
    return socket.connect(connectOptions);
  };
  return agent;
}
