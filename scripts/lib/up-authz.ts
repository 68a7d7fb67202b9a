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

/** Cluster authz_xds's socket in envoy/envoy.yaml, for a host without Nomad: authz's AUTHZ_XDS_SOCKET. */
export const AUTHZ_XDS_SOCKET_PATH = '/run/agent-platform/authz-xds.sock';

/**
 * authz's xDS socket for an installed Envoy, which takes its HTTPS listener from authz by LDS:
 * `authz-xds.sock` in the data dir, beside authz.sock, unless the operator set AUTHZ_XDS_SOCKET.
 * The local edge serves its own HTTPS and needs none.
 */
export function upXdsSocket(env: Env, dataDir: string): string {
  const path = env.AUTHZ_XDS_SOCKET || join(dataDir, 'authz-xds.sock');
  const problem = socketPathProblem(path);
  if (problem) throw new Error(`authz's xDS socket ${problem}; set PLATFORM_DATA_DIR to a shorter directory, or AUTHZ_XDS_SOCKET`);
  return path;
}

/**
 * envoy/envoy.yaml with cluster authz's address at `target` instead of the socket path it
 * names for a host without Nomad, and cluster authz_xds's at `xdsSocket` when given: the
 * bootstrap up.ts gives an installed Envoy.
 */
export function envoyBootstrapFor(yaml: string, target: GrpcTarget, xdsSocket?: string): string {
  const pipe = `pipe: { path: ${AUTHZ_SOCKET_PATH} }`;
  const at = yaml.indexOf(pipe);
  if (at < 0 || yaml.indexOf(pipe, at + 1) >= 0) throw new Error(`envoy.yaml: expected cluster authz's address as "${pipe}", once`);
  const address = isUnixSocket(target)
    ? `pipe: { path: ${JSON.stringify(target.path)} }`
    : `socket_address: { address: ${JSON.stringify(target.host)}, port_value: ${target.port} }`;
  const rendered = yaml.replace(pipe, address);
  if (xdsSocket === undefined) return rendered;
  const xdsPipe = `pipe: { path: ${AUTHZ_XDS_SOCKET_PATH} }`;
  const xdsAt = rendered.indexOf(xdsPipe);
  if (xdsAt < 0 || rendered.indexOf(xdsPipe, xdsAt + 1) >= 0) throw new Error(`envoy.yaml: expected cluster authz_xds's address as "${xdsPipe}", once`);
  return rendered.replace(xdsPipe, () => `pipe: { path: ${JSON.stringify(xdsSocket)} }`);
}
