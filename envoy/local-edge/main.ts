// First: on another Node this stops the program before any other module loads.
import '../../contract/require-supported-node.js';
import { Redis } from 'ioredis';
import { createRequestFigureRecorder } from '../../contract/request-figure-recorder.js';
import { createEdgeSpanRecorder } from '../../contract/edge-trace.js';
import { loadEnvFile } from '../../contract/env-file.js';
import { loadLocalEdgeConfig } from './config.js';
import { settingsOrExit } from '../../contract/settings-reader.js';
import { startLocalEdge } from './server.js';
import { openDomainCertificates } from './domain-certificates.js';
import { TLS_SERVER_POLICY } from './tls-policy.js';

settingsOrExit(() => loadEnvFile(process.env, process.argv.slice(2)));
/** The local edge as a process (`npm run up` starts it when there is no envoy binary). */
const config = settingsOrExit(() => loadLocalEdgeConfig(process.env));
const log = (msg: string, fields: object = {}) => console.log(JSON.stringify({ name: 'local-edge', msg, ...fields }));

// Written once a second, never on a request's path: a Redis outage costs figures, not requests.
const redis = new Redis(config.redisUrl, { keyPrefix: config.redisKeyPrefix, connectTimeout: 2_000, commandTimeout: 2_000, maxRetriesPerRequest: 1 });
redis.on('error', () => undefined);
let lastWarning = 0;
const warn = (msg: string, error?: Error) => {
  if (Date.now() - lastWarning < 5_000) return;
  lastWarning = Date.now();
  log(msg, error ? { err: error.message } : {});
};
const requestFigures = createRequestFigureRecorder({ redis, onError: (error) => warn("Redis refused a second of agents' request figures; they are dropped", error) });
// Invokes' edge spans for the control API's traces, as authz queues them from Envoy's access log.
const edgeSpans = createEdgeSpanRecorder({
  redis,
  onError: (error) => warn('Redis refused a second of edge spans; they are dropped', error),
  onDropped: () => warn('edge spans are dropped: more came in a second than the buffer holds'),
});

// Custom domains' certificates (issue 34), served by SNI beside the agent domain's.
const customDomains = config.tls
  ? openDomainCertificates({ redis, subscriber: redis.duplicate(), keyPrefix: config.redisKeyPrefix, policy: TLS_SERVER_POLICY, log })
  : undefined;
await customDomains?.loaded;
const edge = await startLocalEdge({ ...config, tls: config.tls && { ...config.tls, customDomains }, requestFigures, log });
log('listening', {
  address: `${edge.host}:${edge.port}`,
  ...(edge.httpsPort === null ? {} : { https: `${edge.host}:${edge.httpsPort}`, httpRedirect: config.httpRedirect }),
  authz: config.authzAddress,
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () =>
    void edge
      .close()
      .then(() => Promise.all([requestFigures.close(), edgeSpans.close()]))
      .then(() => customDomains?.close())
      .finally(() => redis.quit().finally(() => process.exit(0))),
  );
}
