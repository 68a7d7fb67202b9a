import { loadLocalEdgeConfig } from './config.js';
import { startLocalEdge } from './server.js';

/** The local edge as a process (`npm run up` starts it when there is no envoy binary). */
const config = loadLocalEdgeConfig(process.env);
const edge = await startLocalEdge(config);
console.log(JSON.stringify({ name: 'local-edge', msg: 'listening', address: `${edge.host}:${edge.port}`, authz: config.authzAddress }));

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void edge.close().finally(() => process.exit(0)));
}
