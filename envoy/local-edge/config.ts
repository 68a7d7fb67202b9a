import type { LocalEdgeOptions } from './server.js';

type Env = Record<string, string | undefined>;

/** EDGE_HOST (127.0.0.1), EDGE_PORT (7080), AUTHZ_ADDRESS (127.0.0.1:7091, as envoy.yaml's authz cluster). */
export function loadLocalEdgeConfig(env: Env): Readonly<LocalEdgeOptions> {
  const problems: string[] = [];
  const port = Number(env.EDGE_PORT || 7080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`EDGE_PORT: expected a port from 0 to 65535, got "${env.EDGE_PORT}"`);
  const authzAddress = env.AUTHZ_ADDRESS || '127.0.0.1:7091';
  if (!/^[^\s:]+:\d{1,5}$/.test(authzAddress)) problems.push(`AUTHZ_ADDRESS: expected host:port of authz's gRPC server, got "${authzAddress}"`);
  if (problems.length > 0) throw new Error(`Invalid local edge configuration:\n  - ${problems.join('\n  - ')}`);
  return Object.freeze({ host: env.EDGE_HOST || '127.0.0.1', port, authzAddress });
}
