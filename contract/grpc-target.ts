/**
 * Where authz's gRPC server listens and where its one client, the edge, connects: a Unix
 * domain socket (authz as Envoy's sidecar, docs/nomad.md) or a TCP host and port. Written
 * as gRPC names them (grpc/grpc doc/naming.md): `unix:/absolute/path`, or `host:port` with
 * an IPv6 host in brackets. grpc-js clients take both forms as they are.
 */
export type GrpcTarget = { readonly path: string } | { readonly host: string; readonly port: number };

/** sun_path holds 108 bytes on Linux, the terminating NUL included (unix(7)). */
export const UNIX_SOCKET_PATH_MAX_BYTES = 107;

export const isUnixSocket = (target: GrpcTarget): target is { readonly path: string } => 'path' in target;

export function formatGrpcTarget(target: GrpcTarget): string {
  if (isUnixSocket(target)) return `unix:${target.path}`;
  return `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
}

/** `text` as a target, or why it is not one (a sentence to follow the setting's name). */
export function parseGrpcTarget(text: string): GrpcTarget | { problem: string } {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    const problem = socketPathProblem(path);
    return problem ? { problem } : { path };
  }
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535) return { problem: `expected unix:/path/to/socket or host:port, got "${text}"` };
  return { host: match[1] ?? match[2]!, port };
}

/** Why `path` cannot name a Unix socket authz listens on or connects to, or undefined when it can. */
export function socketPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `expected an absolute path, got "${path}"`;
  if (Buffer.byteLength(path) > UNIX_SOCKET_PATH_MAX_BYTES) {
    return `a Unix socket's path holds at most ${UNIX_SOCKET_PATH_MAX_BYTES} bytes (unix(7), sun_path), got ${Buffer.byteLength(path)}: "${path}"`;
  }
  return undefined;
}
