import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { openEdgeCertificateFeed } from '../../contract/edge-certificate-feed.js';
import type { XdsConfig } from '../config.js';
import { startAdsServer } from './ads-server.js';
import { EdgeTlsState } from './edge-tls-state.js';
import { ConfigError } from '../../contract/settings-reader.js';
import { loadTlsListenerTemplate, type TlsListenerTemplate } from './tls-listener.js';

export interface EdgeXds {
  close(): Promise<void>;
}

/** The HTTPS listener's template, read at start: a file that is missing or cannot be built is a bad setting. */
export function readXdsTemplate(config: XdsConfig): TlsListenerTemplate {
  try {
    return loadTlsListenerTemplate(config);
  } catch (error) {
    throw new ConfigError([`AUTHZ_XDS_TLS_LISTENER_FILE, AUTHZ_XDS_ENVOY_CONFIG_FILE: ${(error as Error).message}`], 'authz');
  }
}

/**
 * authz's xDS server as a whole: the HTTPS listener's template (readXdsTemplate), the custom domains' certificates followed in
 * Redis on a subscriber connection of its own, and the ADS socket Envoy's authz_xds cluster
 * names. One per edge node: the cluster primary runs it, never a worker (authz/main.ts).
 */
export async function startEdgeXds(config: XdsConfig, template: TlsListenerTemplate, deps: { redis: Redis; keyPrefix: string; logger: Logger }): Promise<EdgeXds> {
  const logger = deps.logger.child({ part: 'xds' });
  const state = new EdgeTlsState(template, (message, fields) => logger.info(fields, message));
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
