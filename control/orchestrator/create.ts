import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { Config } from '../config/config.js';
import { AgentTokens } from '../crypto/agent-token.js';
import { NomadDriver } from './nomad/driver.js';
import { consulClient, nomadClient } from './nomad/http-client.js';
import type { NomadSettings } from './nomad/settings.js';
import type { NomadAgentServices } from './nomad/agent-identity.js';
import { PodmanCli } from './podman/cli.js';
import { PodmanDriver } from './podman/driver.js';
import { platformEndpoints } from './podman/protected-endpoints.js';
import { holdInstance } from './podman/instance-hold.js';
import { defaultStateDirectory, detectHost, hostDirectories, prepareStateDirectory } from './podman/host.js';
import { podmanGlobalArgs } from './podman/settings.js';
import type { AgentServicesAccess } from './podman/replica-tokens.js';
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
export async function createOrchestrator(config: Config, clock: Clock, logger: Logger): Promise<StartedDriver> {
  if (config.orchestrator === 'nomad' && config.nomad) {
    const agentServices = nomadAgentServices(config);
    if (!agentServices) {
      logger.warn(
        { setting: config.agentServices.port === 0 ? 'AGENT_SERVICES_PORT' : 'NOMAD_AGENT_SERVICES_URL' },
        'agents on Nomad are not given the agent services: their replicas keep conversations in memory (set NOMAD_AGENT_SERVICES_URL, docs/nomad.md "Agent services")',
      );
    }
    return { orchestrator: createNomadDriver(config.nomad, clock, logger, agentServices), clock, autoscaledBy: 'orchestrator' };
  }
  return { orchestrator: await startPodmanDriver(config, clock, logger), clock, autoscaledBy: 'platform' };
}

/**
 * The podman driver, once this process holds its instance (instance-hold.ts) and its state
 * directory is ready; a process that cannot have both starts no driver and holds nothing.
 */
async function startPodmanDriver(config: Config, clock: Clock, logger: Logger): Promise<PodmanDriver> {
  const settings = detectHost(config.podman);
  const hold = await holdInstance(settings.instance);
  try {
    prepareStateDirectory(settings.stateDirectory);
  } catch (error) {
    await hold.release();
    throw error;
  }
  if (config.podman.stateDirectory === null && settings.stateDirectory !== defaultStateDirectory(settings.instance, hostDirectories(settings.environment))) {
    logger.warn(
      { setting: 'PODMAN_STATE_DIR', directory: settings.stateDirectory },
      "the podman driver's files are where an earlier version kept them, in TMPDIR, since running replicas mount their tokens from there: set PODMAN_STATE_DIR to keep them there, or leave it unset to move them once no replica is left (docs/orchestration.md, \"Where the driver keeps its files\")",
    );
  }
  const driver = new PodmanDriver(
    new PodmanCli(settings.binary, podmanGlobalArgs(settings), settings.environment),
    settings,
    clock,
    logger.child({ component: 'podman' }),
    protectedEndpointsOf(config),
    agentServicesAccess(config, settings.stateDirectory, clock),
    hold,
  );
  driver.start();
  return driver;
}

/** The platform's own services, which agents must not reach (the podman driver proves it at start). */
export const protectedEndpointsOf = (config: Config) =>
  platformEndpoints(
    { databaseUrl: config.databaseUrl, redisUrl: config.redisUrl, controlHost: config.host, controlPort: config.port },
    // Its metrics count every account's agents and requests. With 0 (any free port, tests only) the port is
    // chosen after the driver starts and is left unfenced: set a fixed port wherever agents run.
    config.metricsPort ? [{ name: 'control API metrics', host: config.host, port: config.metricsPort }] : [],
  );

/**
 * What replicas on this host get to reach the agent services (issue 37), or null when
 * AGENT_SERVICES_PORT is 0. Containers reach the host's 0.0.0.0 listener through
 * `host.containers.internal` (../shared/NOTES.md: a host port bound to 127.0.0.1 is out of
 * their reach), and each replica gets a token of its own, minted with the key every copy
 * of the control API derives from the master keys (control/crypto/agent-token.ts).
 */
export function agentServicesAccess(config: Config, stateDirectory: string, clock: Clock): AgentServicesAccess | null {
  const { port, tokenTtlSeconds, sessions } = config.agentServices;
  if (port === 0) return null;
  const tokens = new AgentTokens(config.masterKeys, tokenTtlSeconds);
  return {
    url: `http://host.containers.internal:${port}`,
    port,
    mint: (agentId, replicaId) => tokens.mint(agentId, replicaId, clock.now()),
    directory: join(stateDirectory, 'agent-tokens'),
    maxSessionBytes: sessions.maxBytes,
  };
}

/**
 * What agents on Nomad get to reach the agent services (issue 37), or null when the
 * endpoint is off (AGENT_SERVICES_PORT 0) or agent nodes were given no address to reach it
 * at (NOMAD_AGENT_SERVICES_URL). Their credential is Nomad's, not ours: the workload
 * identity Nomad signs for the task and renews itself (nomad/agent-identity.ts).
 */
export function nomadAgentServices(config: Config): NomadAgentServices | null {
  const url = config.nomad?.agentServicesUrl ?? null;
  if (url === null || config.agentServices.port === 0) return null;
  return { url, tokenTtlSeconds: config.agentServices.tokenTtlSeconds, maxSessionBytes: config.agentServices.sessions.maxBytes };
}

export function createNomadDriver(settings: NomadSettings, clock: Clock, logger: Logger, agentServices: NomadAgentServices | null = null): NomadDriver {
  const driver = new NomadDriver(
    nomadClient(settings.nomad, settings.requestTimeoutMs, settings.requestAttempts, settings.maxConnections),
    consulClient(settings.consul, settings.requestTimeoutMs, settings.requestAttempts, settings.maxConnections),
    settings,
    clock,
    logger.child({ component: 'nomad' }),
    agentServices,
  );
  driver.start();
  return driver;
}
