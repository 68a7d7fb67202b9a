// First: on another Node this stops the program before any other module loads.
import '../contract/require-supported-node.js';
import { systemClock } from '../contract/clock.js';
import { loadConfig } from './config/config.js';
import { ConfigError, EXIT_CONFIG } from '../contract/settings-reader.js';
import { loadEnvFile } from '../contract/env-file.js';
import { buildControl } from './compose.js';
import { connectDatabase, DEFAULT_POOL, migrate } from './db/database.js';
import { createLogger } from './config/logger.js';
import { createOrchestrator } from './orchestrator/create.js';
import { connectRedis } from './db/redis.js';
import { createLimitedServer } from './http/client-limits.js';
import { startMetricsServer } from './metrics/server.js';

async function main(): Promise<void> {
  loadEnvFile(process.env, process.argv.slice(2));
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const db = connectDatabase(config.databaseUrl, DEFAULT_POOL, config.databaseStatementTimeoutMs, config.databaseTimeouts);
  await migrate(db);
  const redis = connectRedis(config.redisUrl, config.redisKeyPrefix, config.redisCommandTimeoutMs);
  const driver = await createOrchestrator(config, systemClock, logger);
  const { app, agentServices, services, loops, metrics } = buildControl({ config, db, redis, clock: systemClock, logger, driver });
  // Up before the first reconcile, so a slow start shows in its metrics.
  const metricsServer = await startMetricsServer(metrics.registry, config.metricsPort, config.host);
  logger.info({ url: `http://${config.host}:${metricsServer.port}/metrics` }, 'control metrics listening');
  // Adopt what runs and restart what is missing before taking requests.
  await loops.start();

  const server = createLimitedServer(config.clientLimits, app.callback());
  server.listen(config.port, config.host, () => {
    logger.info({ url: `http://${config.host}:${config.port}/v1` }, 'control API listening');
  });
  // The one listener agents' replicas may reach; AGENT_SERVICES_PORT=0 leaves it off.
  const { host: servicesHost, port: servicesPort } = config.agentServices;
  const servicesServer = servicesPort === 0 ? undefined : createLimitedServer(config.clientLimits, agentServices.callback());
  servicesServer?.listen(servicesPort, servicesHost, () => {
    logger.info({ url: `http://${servicesHost}:${servicesPort}/v1` }, 'agent services listening');
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight requests');
    const servers = [server, ...(servicesServer ? [servicesServer] : [])];
    const closed = Promise.all(servers.map((open) => new Promise((resolve) => open.close(resolve))));
    for (const open of servers) open.closeIdleConnections();
    // In-flight requests get up to 10 s to finish; then the process goes anyway.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    // Containers keep running: agents outlive a restart of the control API, which adopts them again.
    await loops.stop();
    // Steps in flight finish; queued ones are dropped, as Postgres holds them and the next start reconciles.
    await services.runner.close();
    await driver.orchestrator.close();
    await Promise.allSettled([db.destroy(), redis.quit(), metricsServer.close()]);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(EXIT_CONFIG);
  }
  console.error(error);
  process.exit(1);
});
