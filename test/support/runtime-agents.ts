import { execFileSync } from 'node:child_process';
import { edgeRequest } from './edge-upstream.js';
import type { LocalEdgeStack } from './local-edge-stack.js';
import { waitFor } from './wait.js';

/** An agent a test made through the control API: its owner's token, its id and its hostname at the edge. */
export interface ServedAgent {
  token: string;
  id: string;
  host: string;
}

/** The default runtime image, built as `npm run up` builds it (cached by its source hash). */
export function buildRuntimeImage(): string {
  return execFileSync('bash', ['runtime-image/scripts/build-image.sh'], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/**
 * POST /invoke with `body` through the local edge, retried while the edge has no routable
 * replica yet (a deploy, a wake, a restart: 502 or 503); any other failure throws.
 */
export async function invokeThroughEdge(edge: LocalEdgeStack, agent: ServedAgent, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  return waitFor(`an answer to ${text}`, async () => {
    const reply = await edgeRequest({
      port: edge.port, host: agent.host, path: '/invoke', method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }, body: text,
    }).catch(() => undefined);
    if (reply && reply.status !== 200 && reply.status !== 503 && reply.status !== 502) throw new Error(`${reply.status}: ${reply.body}`);
    return reply?.status === 200 ? reply : undefined;
  }, 120_000, 250);
}
