import cluster from 'node:cluster';
import { chmod, lstat, unlink } from 'node:fs/promises';
import net from 'node:net';

/**
 * The file of the Unix socket authz's gRPC server listens on (AUTHZ_GRPC_SOCKET), around
 * the bind. Removing it on close needs nothing here: libuv unlinks a bound pipe's path
 * when the handle closes (src/unix/pipe.c, `uv__pipe_close`), and in a cluster the
 * primary's shared handle closes once its last worker has gone (Node's
 * lib/internal/cluster/round_robin_handle.js, `RoundRobinHandle.prototype.remove`).
 */

/**
 * Makes way for a bind at `path`: a socket left by an authz that was killed (SIGKILL, an
 * OOM kill) would make the bind fail with EADDRINUSE, so a socket nobody answers on is
 * removed. Anything else stays: a file that is not a socket, or a socket another process
 * still serves, is an error. In a cluster worker, nothing: the primary cleared the path
 * before forking (authz/cluster.ts) and holds the one socket every worker is dealt
 * connections from, which would answer here.
 */
export async function clearStaleSocket(path: string): Promise<void> {
  if (cluster.isWorker) return;
  let stats;
  try {
    stats = await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!stats.isSocket()) throw new Error(`AUTHZ_GRPC_SOCKET: ${path} exists and is not a socket; authz removes only a stale socket there`);
  if (await answers(path)) throw new Error(`AUTHZ_GRPC_SOCKET: another process already serves ${path}`);
  await unlink(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/**
 * Lets any user who can reach the socket's directory connect. Linux admits a connect() to
 * a socket file only with write permission on it (unix(7), "Pathname socket ownership and
 * permissions"), and the bind creates it under the umask (0755 with the usual 022): Envoy,
 * another user (101 in nomad-jobs/envoy.nomad.hcl, while authz runs as 1000), would get
 * EACCES. Who can connect is decided by the directory instead: in Nomad the allocation's
 * own, which only this group's tasks have mounted. Node's `writableAll` listen option does
 * the same chmod, but grpc-js binds without it (AUTHZ_SERVER=grpc-js): one way for both.
 * A cluster worker's chmod reaches the primary's socket, the same file.
 */
export function openToEnvoy(path: string): Promise<void> {
  return chmod(path, 0o666);
}

/** True when something accepts a connection at `path` (ECONNREFUSED: a stale socket). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
