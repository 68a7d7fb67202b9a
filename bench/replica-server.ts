import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A replica as small as one can be, in a process of its own: answers every request
 * "ok". What the edge benchmark calls directly and through the local edge, so neither
 * figure includes an agent's own work. Prints its port as one JSON line.
 */
const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'));
// Longer than the local edge's 4 s upstream idle timeout, as a replica's should be.
server.keepAliveTimeout = 10_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as AddressInfo).port })));
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
});
