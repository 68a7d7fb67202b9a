import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { openEdgeCertificateFeed } from '../../contract/edge-certificate-feed.js';
import type { XdsConfig } from '../config.js';
import { startAdsServer } from './ads-server.js';
import { EdgeTlsState } from './edge-tls-state.js';
import { loadTlsListenerTemplate } from './tls-listener.js';

export interface EdgeXds {
  close(): Promise<void>;
}

/**
 * authz's xDS server as a whole: the HTTPS listener's template read at start (an unreadable
 * one stops authz, as any bad setting does), the custom domains' certificates followed in
 * Redis on a subscriber connection of its own, and the ADS socket Envoy's authz_xds cluster
 * names. One per edge node: the cluster primary runs it, never a worker (authz/main.ts).
 */
export async function startEdgeXds(config: XdsConfig, deps: { redis: Redis; keyPrefix: string; logger: Logger }): Promise<EdgeXds> {
  const logger = deps.logger.child({ part: 'xds' });
  const state = new EdgeTlsState(loadTlsListenerTemplate(config), (message, fields) => logger.info(fields, message));
  const feed = openEdgeCertificateFeed({
    redis: deps.redis,
    subscriber: deps.redis.duplicate(),
    keyPrefix: deps.keyPrefix,
    onValue: (hostname, value) => state.apply(hostname, value),
    onReadError: (reason, hostname) => logger.warn({ reason, domain: hostname }, 'custom domain certificates not read: Envoy keeps the ones it has'),
  });
  // Serve once the first read settled, so Envoy's first listener already has every domain.
  await feed.loaded;
  const server = await startAdsServer({ socketPath: config.socketPath, state, log: (level, message, fields) => logger[level](fields, message) });
  logger.info({ socket: config.socketPath, listener: state.listenerName }, 'xDS server listening');
  return {
    async close() {
      feed.close();
      await server.close();
    },
  };
}
