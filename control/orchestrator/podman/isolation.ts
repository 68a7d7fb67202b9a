import { existsSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { freeSubnet } from '../../../contract/agent-subnet-pool.js';
import { randomBase62 } from '../../crypto/tokens.js';
import type { PodmanCli } from './cli.js';
import type { PodmanInfo } from './host-info.js';
import type { RootfsLabels } from './rootfs-labels.js';
import { AgentFirewall, nftRunner } from './firewall.js';
import { probeArguments, probeProblems, probeScript, probeTargets } from './isolation-probe.js';
import { busyboxRoot } from './probe-root.js';
import { createPoolNetwork, inSubnet, insidePool, usedSubnets } from './pool-networks.js';
import { holdPoolRoute, ipRunner, type IpRunner } from './pool-route.js';
import { resolveEndpoints, type ProtectedEndpoint, type ResolvedEndpoint } from './protected-endpoints.js';
import { LABEL } from './run-args.js';
import type { PodmanSettings } from './settings.js';

/** The probe found nothing either way: its container did not run. */
class ProbeCouldNotRun extends Error {}

/** Agents would not be isolated on this network (or on this host): no replica may run there. */
export class IsolationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IsolationError';
  }
}

interface NetworkInfo {
  name: string;
  id: string;
  network_interface?: string;
  subnets?: { subnet: string; gateway?: string }[];
  labels?: Record<string, string>;
}

/** Labels the canary and probe containers and the canary network: not agents, never adopted or swept as strays. */
const ISOLATION_LABEL = 'platform.isolation';
const LISTENER_PORT = 8080;

/**
 * Keeps agents from the metadata service, the platform's services and each other, and
 * proves it by effect (issue 13): a firewall of its own (firewall.ts) whatever podman's
 * network backend, then, before any replica runs on a network, a throwaway container on
 * that network tries TCP connects that must not open. A network passes once (cached by
 * its id); a failure is never cached, and every replica on that network is refused.
 *
 * The canary is a listener on an agent-like network of its own, so "another agent's
 * network" has something to answer. At start the host is checked from the canary's network.
 */
export class NetworkIsolation {
  private firewall: AgentFirewall | null = null;
  private backend = 'unknown';
  private readonly verified = new Map<string, string>();
  private readonly ip: IpRunner;
  private endpoints: ResolvedEndpoint[] = [];
  private rootfs: string | null = null;
  private canary: { network: string; container: string; host: string } | null = null;
  /** Why the host as a whole failed its check; null once it passed. */
  private hostProblem: string | null = 'the isolation check has not run yet';

  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: PodmanSettings,
    private readonly protectedEndpoints: ProtectedEndpoint[],
    private readonly logger: Logger,
    /** `podman info`, shared with the probes' labels: the network backend. */
    private readonly hostInfo: PodmanInfo,
    /** Labels the probe's root for containers where SELinux is on. */
    private readonly rootfsLabels: RootfsLabels,
    /** AGENT_SERVICES_PORT, which each probe must reach on its network's gateway; null when the platform runs none. */
    private readonly agentServicesPort: number | null = null,
  ) {
    this.ip = ipRunner(settings.environment);
  }

  private get canaryNetwork() {
    return `platform-canary-${this.settings.instance}`;
  }

  /**
   * At driver start: fences the networks this installation already has (agents that kept
   * running while the control API was down), then checks the host from the canary's network.
   * Never throws: a failure is logged loudly and refuses every replica until a check passes.
   */
  async start(): Promise<void> {
    try {
      this.backend = (await this.hostInfo.host()).networkBackend;
      if (this.backend !== 'netavark') {
        this.logger.warn({ backend: this.backend }, 'podman uses a network backend other than netavark (scripts/ensure-deps.sh says how to switch); agents run only if their isolation is proven on it');
      }
      // The table names its backend: a podman on another backend cannot see our networks, so must not judge the table stale.
      if (this.settings.firewall && !this.firewall) {
        this.firewall = new AgentFirewall({ instance: this.settings.instance, backend: this.backend }, nftRunner(this.settings.environment), this.settings.agentHostPorts);
      }
      this.endpoints = await resolveEndpoints(this.protectedEndpoints, localAddresses());
      this.firewall?.setEndpoints(this.endpoints);
      await this.fence(...(await this.networks(`${LABEL.instance}=${this.settings.instance}`)));
      const stale = await this.firewall?.removeStale(async (instance) => (await this.networks(`${LABEL.instance}=${instance}`)).length > 0);
      if (stale?.length) this.logger.info({ instances: stale }, 'removed the agent firewall tables of installations with no network left');
      const routeProblem = await this.holdRoute();
      if (routeProblem) {
        this.refuse(routeProblem);
        return;
      }
      await this.checkHost();
    } catch (error) {
      this.refuse(`the isolation check could not run: ${describe(error)}`);
    }
  }

  /** Throws IsolationError unless agents on `network` provably reach none of what they must not. */
  async secure(network: string): Promise<void> {
    if (this.hostProblem) {
      // Checked again at each deploy, so a host fixed by hand needs no restart.
      await this.start();
      if (this.hostProblem) throw new IsolationError(this.hostProblem);
    }
    // Each deploy: a route flushed by hand or by a network manager is put back, or nothing runs.
    // The network is read meanwhile (two podman calls at once, not one after the other: a cold wake waits on them).
    const [routeProblem, [info]] = await Promise.all([this.holdRoute(), this.networks(undefined, network)]);
    if (routeProblem) throw new IsolationError(routeProblem);
    if (!info) throw new IsolationError(`network ${network} does not exist`);
    if (!insidePool(this.settings.agentSubnets, info.subnets)) {
      const subnets = (info.subnets ?? []).map((s) => s.subnet).join(', ') || 'none';
      throw new IsolationError(`network ${network} (${subnets}) lies outside the agent subnet pool ${this.settings.agentSubnets.cidr} (PODMAN_AGENT_SUBNETS), so its addresses could leave the host once its bridge goes; remove it (podman network rm) and deploy again`);
    }
    await this.fence(info);
    if (this.verified.get(network) === info.id) return;
    const problems = await this.probe(info, this.canary).catch((error: unknown) => {
      if (error instanceof ProbeCouldNotRun) throw new IsolationError(`the isolation check could not run on ${network}: ${error.message}`);
      throw error;
    });
    if (problems.length > 0) {
      const message = `agents on ${network} would not be isolated: ${problems.join('; ')}`;
      this.logger.error({ network, problems }, `AGENT ISOLATION CHECK FAILED: ${message}. No replica runs there until it passes.`);
      throw new IsolationError(`${message}. No replica runs there until it passes (docs/orchestration.md, "Isolation check")`);
    }
    this.verified.set(network, info.id);
  }

  /** After the network is removed: its bridge leaves the firewall. */
  async release(network: string): Promise<void> {
    this.verified.delete(network);
    await this.firewall?.unfence(network);
  }

  /** Removes the canary; the firewall stays, since replicas may outlive this process. */
  async close(): Promise<void> {
    await this.cli.run(['rm', '--force', '--time', '0', this.canaryContainer()]).catch(() => undefined);
    await this.cli.run(['network', 'rm', '--force', this.canaryNetwork]).catch(() => undefined);
    await this.release(this.canaryNetwork).catch(() => undefined);
    if (this.rootfs) rmSync(this.rootfs, { recursive: true, force: true });
    this.rootfs = null;
  }

  private canaryContainer() {
    return `platform-canary-${this.settings.instance}`;
  }

  private refuse(problem: string): void {
    this.hostProblem = problem;
    this.logger.error({ problem }, `AGENT ISOLATION CHECK FAILED: ${problem}. No agent replica will run until it passes.`);
  }

  /** The pool's unreachable route, installed and proven by effect (pool-route.ts); the problem, or null. */
  private async holdRoute(): Promise<string | null> {
    const unused = freeSubnet(this.settings.agentSubnets, await usedSubnets(this.cli));
    return holdPoolRoute(this.settings.agentSubnets, unused, this.ip);
  }

  private async checkHost(): Promise<void> {
    this.canary = await this.startCanary();
    // The edge and health checks reach replicas at their network address: the host must route there.
    if (!(await opensWithin(this.canary.host, LISTENER_PORT, 5_000))) {
      // A listener that never ran proves nothing about the host's routes: say so, as for the probe.
      const exited = await this.cli
        .json<{ State?: { Running?: boolean; ExitCode?: number } }[]>(['container', 'inspect', this.canary.container])
        .then((rows) => (rows[0]?.State?.Running ? null : `exited with code ${rows[0]?.State?.ExitCode ?? 'unknown'}`), () => 'vanished');
      if (exited) {
        this.refuse(`the isolation check could not run: its canary listener ${exited} (${this.settings.probeBusybox} must be a static busybox)`);
        return;
      }
      this.refuse(`the host cannot reach a container at its address on its network (${this.canary.host}:${LISTENER_PORT}), so the edge could not reach replicas`);
      return;
    }
    const [info] = await this.networks(undefined, this.canaryNetwork);
    const problems = info ? await this.probe(info, null) : ['the canary network vanished'];
    if (problems.length > 0) {
      this.refuse(`agents would not be isolated on this host: ${problems.join('; ')}`);
      return;
    }
    if (this.hostProblem) this.logger.info({ backend: this.backend, firewall: this.settings.firewall }, 'agent isolation checked: metadata service, platform services and other networks out of reach');
    this.hostProblem = null;
  }

  /** The canary network (created like an agent's) with a listener on it; reused when it already runs. */
  private async startCanary(): Promise<{ network: string; container: string; host: string }> {
    const network = this.canaryNetwork;
    const container = this.canaryContainer();
    const exists = await this.cli.run(['network', 'exists', network]).then(() => true, () => false);
    if (!exists) await createPoolNetwork(this.cli, this.settings.agentSubnets, network, { [ISOLATION_LABEL]: this.settings.instance });
    const [info] = await this.networks(undefined, network);
    if (info) await this.fence(info);
    const running = await this.cli
      .json<{ State?: { Running?: boolean } }[]>(['container', 'inspect', container])
      .then((rows) => rows[0]?.State?.Running === true, () => false);
    if (!running) await this.cli.run(await this.listenerArguments(container, network, ['--replace']), 60_000);
    return { network, container, host: await this.addressOf(container, network) };
  }

  /** Connects from a throwaway container on `network`; the problems found (none: isolated). */
  private async probe(info: NetworkInfo, other: { host: string } | null): Promise<string[]> {
    const container = `platform-probe-${randomBase62(8).toLowerCase()}`;
    // A service of no one's on the host, on every address: agents must not reach it either (default deny).
    const unrelated = await listenOnAnyAddress();
    try {
      await this.cli.run(await this.listenerArguments(container, info.name, []), 60_000);
      const self = await this.addressOf(container, info.name);
      const podmanSubnets = (await this.networks()).flatMap((n) => (n.subnets ?? []).map((s) => s.subnet));
      const gateway = info.subnets?.[0]?.gateway ?? null;
      const targets = probeTargets({
        self: { host: self, port: LISTENER_PORT },
        gateway,
        hostAddresses: [...localAddresses()].filter((a) => !a.startsWith('127.') && !podmanSubnets.some((s) => inSubnet(a, s))),
        endpoints: this.endpoints,
        otherNetwork: other && info.name !== this.canaryNetwork ? { host: other.host, port: LISTENER_PORT } : null,
        unrelatedHostPort: (unrelated.address() as AddressInfo).port,
        agentServices: await this.listeningAgentServices(gateway),
      });
      const timeoutMs = (this.settings.probeConnectTimeoutSeconds + 10) * 1000;
      const { stdout } = await this.cli.run(['exec', container, '/bin/busybox', 'sh', '-c', probeScript(this.settings.probeConnectTimeoutSeconds), 'probe', ...probeArguments(targets)], timeoutMs);
      return probeProblems(targets, stdout);
    } catch (error) {
      // Nothing was proven either way: said as such, not as a reachable target.
      throw new ProbeCouldNotRun(`the probe container could not run (${describe(error)})`);
    } finally {
      unrelated.close();
      await this.cli.run(['rm', '--force', '--time', '0', container]).catch(() => undefined);
    }
  }

  /**
   * The agent services' port on `gateway` if the host listens there now. The control API
   * starts that listener after the driver's first check of the host, so that check may
   * find nothing to reach, and says so; each agent network's own check, before its first
   * replica runs, finds it listening and proves replicas there reach it.
   */
  private async listeningAgentServices(gateway: string | null): Promise<{ host: string; port: number } | null> {
    if (this.agentServicesPort === null || gateway === null) return null;
    if (await opens(gateway, this.agentServicesPort)) return { host: gateway, port: this.agentServicesPort };
    this.logger.info({ port: this.agentServicesPort, gateway }, 'agent services not listening yet: this isolation check does not prove replicas reach them');
    return null;
  }

  /** A container that only listens on LISTENER_PORT, from a busybox-only root: no image needed. */
  private async listenerArguments(name: string, network: string, extra: string[]): Promise<string[]> {
    return [
      'run', '--detach', ...extra,
      '--name', name,
      '--label', `${ISOLATION_LABEL}=${this.settings.instance}`,
      '--network', network,
      '--user', '65534:65534',
      '--cap-drop', 'all',
      '--security-opt', 'no-new-privileges',
      '--pids-limit', '64',
      '--memory', '32m',
      '--ulimit', `nofile=${Math.min(this.settings.nofileLimit, 1024)}:${Math.min(this.settings.nofileLimit, 1024)}`,
      '--ulimit', `nproc=${this.settings.nprocLimit}:${this.settings.nprocLimit}`,
      // --rootfs is a switch: the first argument after the options is then a directory, not an image.
      '--rootfs', await this.probeRoot(),
      '/bin/busybox', 'httpd', '-f', '-p', String(LISTENER_PORT), '-h', '/www',
    ];
  }

  /**
   * The probes' root (probe-root.ts), at one path in the instance's directory: a killed
   * control API leaves no copy of its own behind (a temporary directory per run did, 1.9 MB
   * each), and the canary it left running, which the next run reuses, keeps its root. Made
   * once per run, so a changed PODMAN_PROBE_BUSYBOX is taken up.
   */
  private async probeRoot(): Promise<string> {
    const root = join(this.settings.stateDirectory, 'probe-root');
    if (this.rootfs === root && existsSync(join(root, 'bin/busybox'))) return root;
    this.rootfs = await busyboxRoot(root, this.settings.probeBusybox, this.rootfsLabels);
    return root;
  }

  private async addressOf(container: string, network: string): Promise<string> {
    const [info] = await this.cli.json<{ NetworkSettings?: { Networks?: Record<string, { IPAddress?: string }> } }[]>(['container', 'inspect', container]);
    const address = info?.NetworkSettings?.Networks?.[network]?.IPAddress;
    if (!address) throw new Error(`${container} has no address on ${network}`);
    return address;
  }

  private async fence(...infos: NetworkInfo[]): Promise<void> {
    if (!this.firewall || infos.length === 0) return;
    const missing = infos.find((info) => !info.network_interface);
    if (missing) throw new IsolationError(`podman names no bridge interface for network ${missing.name}`);
    await this.firewall.fence(...infos.map((info) => ({ name: info.name, iface: info.network_interface!, gateway: info.subnets?.[0]?.gateway ?? null })));
  }

  private networks(label?: string, name?: string): Promise<NetworkInfo[]> {
    if (name) return this.cli.json<NetworkInfo[]>(['network', 'inspect', name]).catch(() => []);
    return this.cli.json<NetworkInfo[]>(['network', 'ls', ...(label ? ['--filter', `label=${label}`] : []), '--format', 'json']);
  }
}

/** A TCP listener on 0.0.0.0, any port, that accepts and closes. */
async function listenOnAnyAddress(): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '0.0.0.0', resolve));
  return server;
}

/** This machine's IPv4 addresses. */
function localAddresses(): Set<string> {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => list ?? []).filter((a) => a.family === 'IPv4').map((a) => a.address);
  return new Set(addresses);
}


/** Polls a TCP connect from the host until it opens or `withinMs` passes (a container's listener takes a moment). */
async function opensWithin(host: string, port: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (await opens(host, port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

export function opens(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
