import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { addressIn, type SubnetPool } from '../../../contract/agent-subnet-pool.js';

/** Runs `ip` with `args`; resolves with stdout. */
export type IpRunner = (args: string[]) => Promise<string>;

/** `env` is ip's whole environment: podman's (a PATH), none of the control API's own (MASTER_KEYS, ...). */
export function ipRunner(env: Readonly<Record<string, string>>, binary = 'ip', timeoutMs = 5_000): IpRunner {
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(binary, args, { timeout: timeoutMs, killSignal: 'SIGKILL', env }, (error, stdout, stderr) => {
        if (error) reject(new Error(`ip ${args.join(' ')} failed: ${String(stderr).trim() || error.message}`));
        else resolve(String(stdout));
      });
    });
}

/**
 * The errors a connect gets from this host's own routing table, before any packet is
 * sent: an `unreachable` route answers EHOSTUNREACH (Linux net/ipv4/fib_semantics.c,
 * `fib_props[RTN_UNREACHABLE].error`), no route at all ENETUNREACH. Anything else (a timeout, a refusal, an
 * open connection) means the packet went somewhere.
 */
const LOCAL_FAILURES = new Set(['EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Holds an `unreachable` route for the whole agent subnet pool (issue 31, finding 1).
 * A bridge's own route (a /24, more specific) wins while the bridge exists; once netavark
 * removes it, when an agent's last container dies, traffic to its old addresses falls
 * to this route and fails here, instead of following the default route off the host with
 * callers' requests in it. Replaced, not added, so it is idempotent; never removed, since
 * replicas and their addresses outlive this process.
 *
 * Checked by its effect each time: a connect to an address of a /24 no network holds
 * (`unusedSubnet`) must fail locally at once. Resolves with the problem, or null.
 */
export async function holdPoolRoute(pool: SubnetPool, unusedSubnet: string | null, ip: IpRunner): Promise<string | null> {
  try {
    await ip(['route', 'replace', 'unreachable', pool.cidr]);
  } catch (error) {
    return `the unreachable route for the agent subnet pool ${pool.cidr} could not be installed (${(error as Error).message})`;
  }
  if (unusedSubnet === null) return `the agent subnet pool ${pool.cidr} has no free /24 left (PODMAN_AGENT_SUBNETS)`;
  const target = addressIn(unusedSubnet, 2);
  const outcome = await connectOutcome(target, 80, 1_000);
  if (LOCAL_FAILURES.has(outcome)) return null;
  return `a connection to ${target}, an agent address with no network, did not fail on this host (${outcome}): traffic to a removed agent network would leave the host. Check \`ip route get ${target}\``;
}

/** How a TCP connect ended: its error code, `open`, or `timeout`. */
function connectOutcome(host: string, port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (outcome: string) => {
      socket.destroy();
      resolve(outcome);
    };
    socket.once('connect', () => done('open'));
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
    socket.once('timeout', () => done('timeout'));
  });
}
