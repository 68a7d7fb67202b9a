import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Unreachable } from './errors.js';

/** How long the edge may take to start answering; a streamed answer may then run on. */
const RESPONSE_DEADLINE_MS = 120_000;

/**
 * Where to connect for an agent URL: `edgeUrl` when given (AGENTCTL_EDGE_URL or --edge);
 * else a `.localhost` name's loopback address (RFC 6761 §6.3: such names are loopback,
 * though glibc does not resolve subdomains of it); else the URL's own host. The agent's
 * hostname always goes in Host, which is how the edge finds the agent.
 */
export function edgeTarget(agentUrl: string, edgeUrl: string | undefined): { connect: URL; host: string } {
  const agent = new URL(agentUrl);
  if (edgeUrl) return { connect: new URL(edgeUrl), host: agent.host };
  const connect = new URL(agent.href);
  if (agent.hostname.endsWith('.localhost')) connect.hostname = '127.0.0.1';
  return { connect, host: agent.host };
}

/**
 * POSTs JSON to `path` of the agent through the edge with node:http, which (unlike fetch)
 * lets the Host header differ from the address connected to.
 */
export function postThroughEdge(agentUrl: string, edgeUrl: string | undefined, path: string, body: unknown, headers: Record<string, string>): Promise<IncomingMessage> {
  const { connect, host } = edgeTarget(agentUrl, edgeUrl);
  const payload = JSON.stringify(body);
  const send = connect.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(connect, {
      method: 'POST',
      path: `${connect.pathname.replace(/\/$/, '')}${path}`,
      headers: { ...headers, host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      // TLS checks the agent's name, not the address connected to.
      servername: host.replace(/:\d+$/, ''),
      timeout: RESPONSE_DEADLINE_MS,
    });
    request.on('response', (response) => {
      request.setTimeout(0);
      resolve(response);
    });
    request.on('timeout', () => request.destroy(Object.assign(new Error('no answer before the deadline'), { name: 'TimeoutError' })));
    request.on('error', (error) => reject(new Unreachable(`the edge at ${connect.host}`, error)));
    request.end(payload);
  });
}

export async function readText(response: IncomingMessage): Promise<string> {
  let text = '';
  response.setEncoding('utf8');
  for await (const chunk of response) text += chunk;
  return text;
}
