import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { Config } from '../config/config.js';
import { NomadDriver } from './nomad/driver.js';
import { consulClient, nomadClient } from './nomad/http-client.js';
import type { NomadSettings } from './nomad/settings.js';
import { PodmanCli } from './podman/cli.js';
import { PodmanDriver } from './podman/driver.js';
import { platformEndpoints } from './podman/protected-endpoints.js';
import { detectHost } from './podman/host.js';
import { podmanGlobalArgs } from './podman/settings.js';
import type { Orchestrator } from './types.js';

/** A started driver, with what composition needs to know of it besides its interface. */
export interface StartedDriver {
  orchestrator: Orchestrator;
  /** The clock the driver stamps replicas' start with; the autoscaler ages replicas by it. */
  clock: Clock;
  /**
   * Who scales auto-scaled agents: `platform`, the control API's own autoscaler (podman
   * scales nothing by itself); `orchestrator`, the Nomad Autoscaler, from the job's scaling block.
   */
  autoscaledBy: 'platform' | 'orchestrator';
}

/** The one place a driver is chosen. */
export function createOrchestrator(config: Config, clock: Clock, logger: Logger): StartedDriver {
  if (config.orchestrator === 'nomad' && config.nomad) {
    return { orchestrator: createNomadDriver(config.nomad, clock, logger), clock, autoscaledBy: 'orchestrator' };
  }
  const settings = detectHost(config.podman);
  const driver = new PodmanDriver(new PodmanCli(settings.binary, podmanGlobalArgs(settings), settings.environment), settings, clock, logger.child({ component: 'podman' }), protectedEndpointsOf(config));
  driver.start();
  return { orchestrator: driver, clock, autoscaledBy: 'platform' };
}

/** The platform's own services, which agents must not reach (the podman driver proves it at start). */
export const protectedEndpointsOf = (config: Config) =>
  platformEndpoints(
    { databaseUrl: config.databaseUrl, redisUrl: config.redisUrl, controlHost: config.host, controlPort: config.port },
    // Its metrics count every account's agents and requests. With 0 (any free port, tests only) the port is
    // chosen after the driver starts and is left unfenced: set a fixed port wherever agents run.
    config.metricsPort ? [{ name: 'control API metrics', host: config.host, port: config.metricsPort }] : [],
  );

export function createNomadDriver(settings: NomadSettings, clock: Clock, logger: Logger): NomadDriver {
  const driver = new NomadDriver(
    nomadClient(settings.nomad, settings.requestTimeoutMs, settings.requestAttempts, settings.maxConnections),
    consulClient(settings.consul, settings.requestTimeoutMs, settings.requestAttempts, settings.maxConnections),
    settings,
    clock,
    logger.child({ component: 'nomad' }),
  );
  driver.start();
  return driver;
}
