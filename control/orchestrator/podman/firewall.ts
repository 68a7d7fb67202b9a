import { execFile } from 'node:child_process';
import { deleteTableScript, fenceScript, isPlatformTable, parseOwner, tableName, type FencedNetwork, type TableOwner } from './firewall-rules.js';
import type { ResolvedEndpoint } from './protected-endpoints.js';

/** Runs `nft` with `args`, feeding `script` on stdin; resolves with stdout. */
export type NftRunner = (args: string[], script?: string) => Promise<string>;

/** `env` is nft's whole environment: podman's (a PATH), none of the control API's own (MASTER_KEYS, ...). */
export function nftRunner(env: Readonly<Record<string, string>>, binary = 'nft', timeoutMs = 10_000): NftRunner {
  return (args, script) =>
    new Promise((resolve, reject) => {
      const child = execFile(binary, args, { timeout: timeoutMs, killSignal: 'SIGKILL', env }, (error, stdout, stderr) => {
        if (error) reject(new Error(`nft ${args.join(' ')} failed: ${String(stderr).trim() || error.message}`));
        else resolve(String(stdout));
      });
      // nft reads stdin only for `-f -`; a command that does not may close it first (EPIPE), which is no failure.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(script ?? '');
    });
}

/**
 * The installation's nftables table (firewall-rules.ts says what it holds): one bridge
 * per agent network, replaced whole on every change. Changes are applied one at a time,
 * each from the latest set, so two networks fenced at once both end up in the table.
 */
export class AgentFirewall {
  readonly table: string;
  private readonly networks = new Map<string, FencedNetwork>();
  private endpoints: ResolvedEndpoint[] = [];
  private applying: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly owner: TableOwner,
    private readonly nft: NftRunner,
    /** PODMAN_AGENT_HOST_PORTS: the host ports agents may open. */
    private readonly openHostPorts: number[] = [],
  ) {
    this.table = tableName(owner.instance);
  }

  setEndpoints(endpoints: ResolvedEndpoint[]): void {
    this.endpoints = endpoints;
  }

  /** Adds bridges in one change: at a restart, no running agent's bridge is left out of the table for a moment. */
  fence(...networks: FencedNetwork[]): Promise<void> {
    for (const network of networks) this.networks.set(network.name, network);
    return this.apply();
  }

  unfence(name: string): Promise<void> {
    if (!this.networks.delete(name)) return Promise.resolve();
    return this.apply();
  }

  fenced(name: string): boolean {
    return this.networks.has(name);
  }

  private apply(): Promise<void> {
    const run = this.applying.then(() =>
      this.nft(['-f', '-'], fenceScript({ table: this.table, owner: this.owner, networks: [...this.networks.values()], endpoints: this.endpoints, openHostPorts: this.openHostPorts })),
    );
    this.applying = run.catch(() => undefined);
    return run.then(() => undefined);
  }

  /**
   * Deletes the tables of installations on this backend that have no network left (a
   * control API that crashed after its agents were deleted). Tables of other backends are
   * left alone: this podman cannot see their networks.
   */
  async removeStale(hasNetworks: (instance: string) => Promise<boolean>): Promise<string[]> {
    const listing = await this.nft(['list', 'tables']);
    const names = [...listing.matchAll(/^table inet (\S+)$/gm)].map((m) => m[1]!).filter((name) => isPlatformTable(name) && name !== this.table);
    const removed: string[] = [];
    for (const name of names) {
      const owner = parseOwner(await this.nft(['list', 'table', 'inet', name]).catch(() => ''));
      if (!owner || owner.backend !== this.owner.backend || (await hasNetworks(owner.instance))) continue;
      await this.nft(['-f', '-'], deleteTableScript(name)).then(() => removed.push(owner.instance), () => undefined);
    }
    return removed;
  }
}
