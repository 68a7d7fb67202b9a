import type { Server } from 'node:http';

const IDLE_SWEEP_MS = 50;

/**
 * Stops accepting connections and waits for in-flight requests to finish, at
 * most `graceMs`; then cuts whatever is left. Resolves with how it ended.
 */
export function closeGracefully(server: Server, graceMs: number): Promise<'drained' | 'cut'> {
  return new Promise((resolve) => {
    let outcome: 'drained' | 'cut' = 'drained';
    // Keep-alive connections become idle only when their request ends; close them as they do.
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    const deadline = setTimeout(() => {
      outcome = 'cut';
      server.closeAllConnections();
    }, graceMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(deadline);
      resolve(outcome);
    });
    server.closeIdleConnections();
  });
}
