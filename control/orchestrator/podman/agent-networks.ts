import type { Logger } from 'pino';
import { interfaceOnSubnetOf, pinBridgeAddress } from './bridge-address.js';
import type { PodmanCli } from './cli.js';
import type { PodmanInfo } from './host-info.js';
import type { RootfsLabels } from './rootfs-labels.js';
import { NetworkIsolation } from './isolation.js';
import { ipRunner, type IpRunner } from './pool-route.js';
import { createPoolNetwork } from './pool-networks.js';
import type { ProtectedEndpoint } from './protected-endpoints.js';
import { LABEL, networkName } from './run-args.js';
import type { PodmanSettings } from './settings.js';

/**
 * Each agent's own podman network, on a /24 of the agent subnet pool, and its fence
 * (isolation.ts): a replica runs on its network only once isolation there is proven, and
 * a network that goes leaves the firewall. Its bridge's MAC address is pinned once a
 * replica runs there (bridge-address.ts), so that removing a replica never cuts the others off.
 */
export class AgentNetworks {
  private readonly isolation: NetworkIsolation;
  private readonly ip: IpRunner;
  /** Bridges whose address could not be pinned, said once each. */
  private readonly unpinned = new Set<string>();

  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: PodmanSettings,
    /** What agents must not reach besides the metadata service: the platform's own services. */
    protectedEndpoints: ProtectedEndpoint[],
    private readonly logger: Logger,
    /** `podman info`, asked once for the isolation check and the probes' labels. */
    hostInfo: PodmanInfo,
    /** Labels the isolation probe's root for containers where SELinux is on. */
    rootfsLabels: RootfsLabels,
    /** The agent services' port, which replicas must reach (isolation.ts checks it); null when there are none. */
    agentServicesPort: number | null = null,
  ) {
    this.isolation = new NetworkIsolation(cli, settings, [...protectedEndpoints, ...settings.protectedEndpoints], logger, hostInfo, rootfsLabels, agentServicesPort);
    this.ip = ipRunner(settings.environment);
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

  /**
   * Pins the MAC address of the bridge a replica at `address` is on (netavark creates the
   * bridge with the network's first container, and removes it with the last). Never throws:
   * a bridge that cannot be pinned (podman rootless, no CAP_NET_ADMIN) still carries its
   * replicas, with the stall bridge-address.ts describes after a removal; said once per bridge.
   */
  async pinBridgeOf(address: string): Promise<void> {
    const bridge = interfaceOnSubnetOf(address);
    try {
      if (bridge === null) throw new Error(`no interface of this host is on the subnet of ${address}`);
      if (await pinBridgeAddress(bridge, this.ip)) this.logger.debug({ bridge }, 'pinned the MAC address of an agent bridge');
    } catch (error) {
      // Without an interface on the subnet (podman rootless), every replica would say the same: once.
      const key = bridge ?? 'no interface';
      if (this.unpinned.has(key)) return;
      this.unpinned.add(key);
      this.logger.warn({ err: error, address }, "could not pin the MAC address of an agent bridge: when a replica on it is removed, the others may not reach the host for up to two minutes");
    }
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
