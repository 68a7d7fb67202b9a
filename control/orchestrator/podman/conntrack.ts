import { execFile } from 'node:child_process';
import type { Logger } from 'pino';

/** Runs conntrack-tools' `conntrack` with `args`; resolves with stdout, rejects with its stderr in the message. */
export type ConntrackRunner = (args: string[]) => Promise<string>;

/** `env` is conntrack's whole environment: podman's (a PATH), none of the control API's own (MASTER_KEYS, ...). */
export function conntrackRunner(env: Readonly<Record<string, string>>, binary = 'conntrack', timeoutMs = 5_000): ConntrackRunner {
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(binary, args, { timeout: timeoutMs, killSignal: 'SIGKILL', env }, (error, stdout, stderr) => {
        if (error) reject(new Error(`conntrack ${args.join(' ')} failed: ${String(stderr).trim() || error.message}`));
        else resolve(String(stdout));
      });
    });
}

/** conntrack-tools 1.4 exits 1 when a delete matched nothing, saying so on stderr: nothing to forget is no failure. */
const NOTHING_MATCHED = /\b0 flow entries have been deleted/;

/**
 * Forgets what the host's connection tracking still holds of connections made to an address,
 * before a new container holding that address is routed.
 *
 * Agent addresses are reused: podman hands a removed replica's address to a later container,
 * and the host reuses its source ports freely, since the replica closed first and the host
 * keeps no TIME_WAIT of its own. A connection from the edge or a health check can then have
 * the very ports of one the previous container left in conntrack (TIME_WAIT holds 120 s,
 * LAST_ACK 30 s, each packet renewing it). Tracked against that old entry's state, the new
 * container's answer never reached the caller: it saw its request acknowledged and then
 * nothing, while the container resent its answer until it gave up and reset the connection,
 * two minutes later. Seen on this host in the podman lifecycle suite's redeploy under a
 * stream (1 request in 2,449, in 2 of 5 runs back to back), and once in CI.
 *
 * netavark does the same from its later versions on, for the same reason: before a container's
 * network is set up it deletes every entry whose reply tuple names the container's address
 * (containers/netavark src/network/netlink_netfilter.rs, `flush_udp_conntrack` and
 * `matches_flow`; netavark issue 1045). Debian bookworm's netavark 1.4 does not. Here only
 * connections made *to* the address go (conntrack's original destination): the ones the edge
 * and health checks make, and none the new container may already have opened itself.
 */
export class ConnectionTracking {
  private warned = false;

  constructor(
    private readonly run: ConntrackRunner,
    private readonly logger: Logger,
  ) {}

  /**
   * Never throws: without conntrack-tools (or the right to use them) a replica still runs and
   * is routed, and the host keeps this rare stall; the first failure is logged.
   */
  async forgetConnectionsTo(address: string): Promise<void> {
    try {
      await this.run(['--delete', '--orig-dst', address]);
    } catch (error) {
      if (NOTHING_MATCHED.test((error as Error).message)) return;
      if (this.warned) return;
      this.warned = true;
      this.logger.warn(
        { err: error, address },
        'could not delete the connection tracking entries of a reused agent address (scripts/ensure-deps.sh installs conntrack): a request to a new replica may stall until conntrack forgets its previous holder',
      );
    }
  }
}
