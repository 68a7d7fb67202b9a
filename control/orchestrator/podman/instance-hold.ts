import { createServer, type Server } from 'node:net';
import { ConfigError } from '../../../contract/settings-reader.js';

/** This process's hold on a podman instance of this host, given back by `release`. */
export interface InstanceHold {
  release(): Promise<void>;
}

/**
 * Takes the podman instance (PODMAN_INSTANCE) for this control API, or throws a ConfigError
 * when another process on this host holds it. The driver keeps its view of the jobs in its
 * own process (docs/decisions.md, "Loops in several copies of the control API"), so a second
 * copy on the same instance would converge the same containers from a view of its own:
 * each restarting, replacing and removing what the other started. A second copy, a unit
 * started twice say, now stops at start instead.
 *
 * The hold is a listening Unix socket in Linux's abstract namespace, named after the
 * instance: a second bind of the name fails with EADDRINUSE, and the kernel frees the name
 * when the process ends, however it ends (unix(7), "Abstract sockets"), so no lock file
 * outlives a killed control API. Such names are per network namespace: two control APIs
 * in different network namespaces of one host do not see each other's hold. Any user of the
 * host may bind such a name, so a local user could keep the control API from starting (not
 * an agent: each runs in a network namespace of its own); the error names the holder's
 * socket, which `ss -xlp` ties to a process.
 */
export async function holdInstance(instance: string): Promise<InstanceHold> {
  const server = createServer((socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(holdName(instance), resolve));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new ConfigError([
      `PODMAN_INSTANCE: another control API on this host runs the podman instance "${instance}" (\`ss -xlp | grep ${holdName(instance).slice(1)}\` names the process); run one per host, or give this one an instance of its own (docs/orchestration.md, "One control API per instance")`,
    ]);
  }
  // Never keeps the process alive by itself: the control API's own servers do.
  server.unref();
  return { release: () => closed(server) };
}

/** The socket's name: a leading NUL puts it in the abstract namespace (ss shows it as `@agent-platform-podman-…`). */
const holdName = (instance: string) => `\0agent-platform-podman-${instance}`;

const closed = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));
