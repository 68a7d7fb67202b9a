import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseSubnetPool } from '../../contract/agent-subnet-pool.js';

/** The local edge forwards only into its EDGE_UPSTREAM_SUBNETS: these replicas are on loopback. */
export const LOOPBACK_UPSTREAMS = Object.freeze([parseSubnetPool('EDGE_UPSTREAM_SUBNETS', '127.0.0.0/8')]);

/** A tiny replica on 127.0.0.1 that records what reached it. */
export interface TestUpstream {
  address: string;
  port: number;
  /** What reached the replica; `remotePort` tells connections apart (keep-alive reuses one). */
  received: { method: string; url: string; headers: IncomingHttpHeaders; body: string; remotePort: number }[];
  close(): Promise<void>;
}

/** Takes the request unread, so it can stream; `received` then records no body. */
export type UpstreamHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** Default: echo JSON of what arrived, tagged with `name`, so a test can tell replicas apart. */
export async function startUpstream(name: string, handler?: UpstreamHandler): Promise<TestUpstream> {
  const received: TestUpstream['received'] = [];
  const server: Server = createServer((request, response) => {
    if (handler) {
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: '', remotePort: request.socket.remotePort ?? 0 });
      handler(request, response);
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body, remotePort: request.socket.remotePort ?? 0 });
      response.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
      response.end(JSON.stringify({ upstream: name, method: request.method, url: request.url, headers: request.headers, body }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    port,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface EdgeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface EdgeRequestOptions {
  port: number;
  host: string;
  path?: string;
  method?: string;
  /** The client's source address (127.0.0.2, 127.0.0.3, …): the caller authz counts. */
  localAddress?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** One HTTP/1.1 request to the edge, with the Host header set to an agent hostname. */
export function edgeRequest({ port, host, path = '/', method = 'GET', localAddress = '127.0.0.1', headers = {}, body }: EdgeRequestOptions): Promise<EdgeResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, path, method, localAddress, headers: { host, ...headers }, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString() }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}
