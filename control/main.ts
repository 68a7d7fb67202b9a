import { systemClock } from '../contract/clock.js';
import { ConfigError, loadConfig } from './config.js';
import { buildControl } from './compose.js';
import { connectDatabase, migrate } from './db/database.js';
import { createLogger } from './logger.js';
import { createOrchestrator } from './orchestrator/create.js';
import { Reconciler } from './services/reconciler.js';
import { Autoscaler } from './services/autoscaler.js';
import { ReplicaMeter } from './services/replica-meter.js';
import { UsageFlusher } from './services/usage-flusher.js';
import { exclusivePass, LOOP_LOCKS } from './services/exclusive-pass.js';
import { connectRedis } from './redis.js';
import { createLimitedServer } from './http/client-limits.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const db = connectDatabase(config.databaseUrl);
  await migrate(db);
  const redis = connectRedis(config.redisUrl);
  const orchestrator = createOrchestrator(config, systemClock, logger);
  const { app, services } = buildControl({ config, db, redis, clock: systemClock, logger, orchestrator });
  const reconciler = new Reconciler(
    services.runner!, services.edge, config.reconcileIntervalMs, logger.child({ component: 'reconciler' }),
    exclusivePass(db, LOOP_LOCKS.reconciler),
  );
  // Adopt what runs and restart what is missing before taking requests.
  await reconciler.start();
  // The podman driver scales auto-scaled agents here; Nomad's job carries a scaling block for the Nomad Autoscaler instead.
  const autoscaler = config.orchestrator === 'podman'
    ? new Autoscaler(db, redis, orchestrator, services.deployments, systemClock, config.autoscale, logger.child({ component: 'autoscaler' }), { exclusive: exclusivePass(db, LOOP_LOCKS.autoscaler) })
    : undefined;
  autoscaler?.start();
  const meter = new ReplicaMeter(db, orchestrator, systemClock, config.usageMeterIntervalMs, logger.child({ component: 'replica-meter' }));
  await meter.start();
  const flusher = new UsageFlusher(db, redis, systemClock, config.usageFlushIntervalMs, logger.child({ component: 'usage-flusher' }));
  flusher.start();

  const server = createLimitedServer(config.clientLimits, app.callback());
  server.listen(config.port, config.host, () => {
    logger.info({ url: `http://${config.host}:${config.port}/v1` }, 'control API listening');
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight requests');
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    // In-flight requests get up to 10 s to finish; then the process goes anyway.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    // Containers keep running: agents outlive a restart of the control API, which adopts them again.
    await autoscaler?.stop();
    await reconciler.stop();
    // The last counts of the edge reach Postgres, and replica time is measured once more.
    await flusher.stop();
    await meter.pass().catch(() => undefined);
    await meter.stop();
    // Steps in flight finish; queued ones are dropped, as Postgres holds them and the next start reconciles.
    await services.runner?.close();
    await orchestrator.close();
    await Promise.allSettled([db.destroy(), redis.quit()]);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  console.error(error);
  process.exit(1);
});
