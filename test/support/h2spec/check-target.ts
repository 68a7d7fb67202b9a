import { createGrpcServer, type GrpcCallback, type UnaryCall } from '../../../authz/grpc-server.js';
import { frameMessage } from '../../../proto/grpc-wire.js';
import { loadAuthorizationService } from '../../../proto/load.js';
import { field, type HeaderField } from './hpack-encoder.js';

/**
 * What h2spec runs against, and the request it sends, made gRPC: authz's server
 * (createGrpcServer) serving Envoy's real Authorization service with a Check that allows
 * everything, and a Check call in place of h2spec's GET. An answer to a Check (HEADERS
 * :status 200, DATA with the CheckResponse, trailers) is what h2spec's "response" means here.
 */

export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

export interface CheckTarget {
  port: number;
  /** `:authority`, as h2spec's CommonHeaders writes it for a port other than 80: host:port. */
  authority: string;
  /** The CheckRequests the handler was called with, decoded by proto-loader. */
  checks: unknown[];
  close(): void;
}

const ALLOWED = { status: { code: 0, message: '' }, ok_response: {} };

export async function startCheckTarget(): Promise<CheckTarget> {
  const { service } = loadAuthorizationService();
  const server = createGrpcServer();
  const checks: unknown[] = [];
  server.addService(service, {
    Check(call: UnaryCall<unknown>, callback: GrpcCallback<typeof ALLOWED>) {
      checks.push(call.request);
      callback(null, ALLOWED);
    },
  });
  const { port } = await server.listen({ host: '127.0.0.1', port: 0 });
  return { port, authority: `127.0.0.1:${port}`, checks, close: () => server.forceShutdown() };
}

/**
 * h2spec's CommonHeaders (spec/util.go: :method GET, :scheme, :path, :authority), made a
 * gRPC call: POST to Check, then content-type and te, which gRPC requires. h2spec's cases
 * change or add fields to this list; they do so here to the same list.
 */
export function checkHeaders(authority: string): HeaderField[] {
  return [
    field(':method', 'POST'),
    field(':scheme', 'http'),
    field(':path', CHECK_PATH),
    field(':authority', authority),
    field('content-type', 'application/grpc'),
    field('te', 'trailers'),
  ];
}

const checkRequest = (padding: string) => ({
  attributes: {
    request: {
      http: { method: 'GET', path: '/', host: 'h2spec.test', scheme: 'http', headers: { 'user-agent': 'h2spec', ...(padding ? { 'x-padding': padding } : {}) } },
    },
  },
});

/**
 * A CheckRequest as one gRPC Length-Prefixed-Message: the body of every request here.
 * With `size`, padded (a header of the checked request) to exactly `size` bytes on the
 * wire, for the cases about frame sizes (http2/4.2).
 */
export function checkBody(size?: number): Buffer {
  const serialize = loadAuthorizationService().service.Check!.requestSerialize;
  const framed = (padding: string) => frameMessage(serialize(checkRequest(padding)));
  if (size === undefined) return framed('');
  // The padding header costs a few bytes of its own, and each enclosing length prefix grows
  // at 128 and 16,384: try the paddings just below the estimate.
  const estimate = size - framed('').length;
  for (let padding = Math.max(0, estimate - 64); padding <= estimate; padding += 1) {
    const body = framed('x'.repeat(padding));
    if (body.length === size) return body;
  }
  throw new Error(`no CheckRequest is exactly ${size} bytes framed`);
}
