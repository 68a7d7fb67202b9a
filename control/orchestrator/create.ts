import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { PodmanCli } from './podman/cli.js';
import { PodmanDriver } from './podman/driver.js';
import { podmanGlobalArgs } from './podman/settings.js';
import type { Orchestrator } from './types.js';

/** The one place a driver is chosen. */
export function createOrchestrator(config: Config, clock: Clock, logger: Logger): Orchestrator {
  const settings = config.podman;
  const driver = new PodmanDriver(new PodmanCli(settings.binary, podmanGlobalArgs(settings)), settings, clock, logger.child({ component: 'podman' }));
  driver.start();
  return driver;
}
