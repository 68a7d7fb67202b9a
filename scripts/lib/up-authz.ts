import { join } from 'node:path';
import { isUnixSocket, parseGrpcTarget, socketPathProblem, type GrpcTarget } from '../../contract/grpc-target.js';
import { AUTHZ_SOCKET_PATH } from '../../envoy/local-edge/envoy-parity.js';

type Env = Record<string, string | undefined>;

/** How `npm run up` wires authz to the edge in front of it. */
export interface UpAuthzWiring {
  /** Settings up.ts adds to authz's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Where the edge reaches authz: the local edge's AUTHZ_ADDRESS, Envoy's cluster authz. */
  readonly target: GrpcTarget;
}

/**
 * authz serves gRPC on a Unix socket in the data dir, `authz.sock`, and opens no TCP port
 * for it: the edge is its one client, on the same host, as Envoy is its sidecar's in
 * production (docs/edge.md, "authz beside Envoy"). An operator's AUTHZ_GRPC_SOCKET or AUTHZ_GRPC_LISTEN wins.
 */
export function upAuthzWiring(env: Env, dataDir: string): UpAuthzWiring {
  if (env.AUTHZ_GRPC_LISTEN) {
    const target = parseGrpcTarget(env.AUTHZ_GRPC_LISTEN);
    if ('problem' in target || isUnixSocket(target)) throw new Error(`AUTHZ_GRPC_LISTEN: expected host:port, got "${env.AUTHZ_GRPC_LISTEN}"`);
    return { env: {}, target };
  }
  const path = env.AUTHZ_GRPC_SOCKET || join(dataDir, 'authz.sock');
  const problem = socketPathProblem(path);
  if (problem) throw new Error(`authz's socket ${problem}; set PLATFORM_DATA_DIR to a shorter directory, or AUTHZ_GRPC_SOCKET`);
  return { env: { AUTHZ_GRPC_SOCKET: path }, target: { path } };
}

/**
 * envoy/envoy.yaml with cluster authz's address at `target` instead of the socket path it
 * names for a host without Nomad: the bootstrap up.ts gives an installed Envoy.
 */
export function envoyBootstrapFor(yaml: string, target: GrpcTarget): string {
  const pipe = `pipe: { path: ${AUTHZ_SOCKET_PATH} }`;
  const at = yaml.indexOf(pipe);
  if (at < 0 || yaml.indexOf(pipe, at + 1) >= 0) throw new Error(`envoy.yaml: expected cluster authz's address as "${pipe}", once`);
  const address = isUnixSocket(target)
    ? `pipe: { path: ${JSON.stringify(target.path)} }`
    : `socket_address: { address: ${JSON.stringify(target.host)}, port_value: ${target.port} }`;
  return yaml.replace(pipe, address);
}
