import type { Logger } from 'pino';
import type { PodmanCli } from './cli.js';
import { NetworkIsolation } from './isolation.js';
import { createPoolNetwork } from './pool-networks.js';
import type { ProtectedEndpoint } from './protected-endpoints.js';
import { LABEL, networkName } from './run-args.js';
import type { PodmanSettings } from './settings.js';

/**
 * Each agent's own podman network, on a /24 of the agent subnet pool, and its fence
 * (isolation.ts): a replica runs on its network only once isolation there is proven, and
 * a network that goes leaves the firewall.
 */
export class AgentNetworks {
  private readonly isolation: NetworkIsolation;

  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: PodmanSettings,
    /** What agents must not reach besides the metadata service: the platform's own services. */
    protectedEndpoints: ProtectedEndpoint[],
    logger: Logger,
    /** The agent services' port, which replicas must reach (isolation.ts checks it); null when there are none. */
    agentServicesPort: number | null = null,
  ) {
    this.isolation = new NetworkIsolation(cli, settings, [...protectedEndpoints, ...settings.protectedEndpoints], logger, agentServicesPort);
  }

  /** Fences the networks already there and checks the host; never throws (isolation.ts). */
  start(): Promise<void> {
    return this.isolation.start();
  }

  /** The agent's network, created when missing; throws unless its isolation is proven. */
  async ensure(agentId: string): Promise<void> {
    const name = networkName(agentId);
    const exists = await this.cli.run(['network', 'exists', name]).then(() => true, () => false);
    if (!exists) {
      await createPoolNetwork(this.cli, this.settings.agentSubnets, name, { [LABEL.instance]: this.settings.instance, [LABEL.agentId]: agentId });
    }
    await this.isolation.secure(name);
  }

  /** Throws unless the agent's existing network is (still) isolated: checked again before a restart. */
  secure(agentId: string): Promise<void> {
    return this.isolation.secure(networkName(agentId));
  }

  async remove(agentId: string): Promise<void> {
    await this.cli.run(['network', 'rm', '--force', networkName(agentId)]).catch(() => undefined);
    await this.isolation.release(networkName(agentId));
  }

  /** Removes this installation's networks of agents no job claims (deleted while the control API was down). */
  async removeStrays(claimed: (agentId: string) => boolean): Promise<void> {
    const networks = await this.cli
      .json<{ name: string; labels?: Record<string, string> }[]>(['network', 'ls', '--filter', `label=${LABEL.instance}=${this.settings.instance}`, '--format', 'json'])
      .catch(() => []);
    for (const network of networks.filter((n) => !claimed(n.labels?.[LABEL.agentId] ?? ''))) {
      await this.cli.run(['network', 'rm', '--force', network.name]).catch(() => undefined);
      await this.isolation.release(network.name);
    }
  }

  /** Removes the isolation canary; networks and their fences stay, since replicas may outlive this process. */
  close(): Promise<void> {
    return this.isolation.close();
  }
}
