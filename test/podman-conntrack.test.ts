import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ConnectionTracking, conntrackRunner } from '../control/orchestrator/podman/conntrack.js';

/**
 * What the podman driver forgets of a reused agent address before a new replica there is
 * routed (conntrack.ts), on this host's own connection tracking: entries are written with
 * conntrack-tools, as the kernel would have left them, and read back the same way. The
 * addresses are of a /24 of the agent pool no test network takes (10.89.254.0/24).
 */

const REUSED = '10.89.254.7';
const OTHER_REPLICA = '10.89.254.8';
const HOST_SIDE = '10.89.254.1';
const PATH_ENV = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };

/** A tracked TCP connection from `from`:`sport` to `to`:`dport`, in `state`, as the kernel tracks one. */
function track(from: string, sport: number, to: string, dport: number, state: string): void {
  execFileSync('conntrack', [
    '--create', '--proto', 'tcp', '--orig-src', from, '--orig-dst', to, '--orig-port-src', String(sport), '--orig-port-dst', String(dport),
    '--reply-src', to, '--reply-dst', from, '--reply-port-src', String(dport), '--reply-port-dst', String(sport),
    '--state', state, '--timeout', '120', '--status', 'ASSURED',
  ], { stdio: 'ignore' });
}

/** The tracked TCP connections that name `address` on either side, as `src:sport>dst:dport`. */
function trackedConnectionsOf(address: string): string[] {
  const listing = (side: string) => {
    try {
      return execFileSync('conntrack', ['--dump', '--proto', 'tcp', side, address], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    } catch {
      return ''; // exits 1 when nothing matched
    }
  };
  const flows = `${listing('--orig-src')}${listing('--orig-dst')}`.split('\n').filter(Boolean).map((line) => {
    const field = (name: string) => new RegExp(`\\b${name}=(\\S+)`).exec(line)?.[1];
    return `${field('src')}:${field('sport')}>${field('dst')}:${field('dport')}`;
  });
  return [...new Set(flows)].sort();
}

function forgetEverythingOf(...addresses: string[]): void {
  for (const address of addresses) {
    for (const side of ['--orig-src', '--orig-dst']) {
      try {
        execFileSync('conntrack', ['--delete', side, address], { stdio: 'ignore' });
      } catch {
        // nothing matched
      }
    }
  }
}

/** A logger whose lines a test can read. */
function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('podman driver: a reused address forgets its old connections (conntrack)', () => {
  before(() => forgetEverythingOf(REUSED, OTHER_REPLICA));
  afterEach(() => forgetEverythingOf(REUSED, OTHER_REPLICA));

  it("deletes the host's connections to the address, in any state, and nothing else", async () => {
    track(HOST_SIDE, 42464, REUSED, 8080, 'TIME_WAIT');
    track(HOST_SIDE, 36564, REUSED, 8080, 'LAST_ACK');
    track(HOST_SIDE, 40000, OTHER_REPLICA, 8080, 'TIME_WAIT');
    // One the address opened itself (to agent services on the host): a new container's own, which must stay.
    track(REUSED, 51000, HOST_SIDE, 7090, 'ESTABLISHED');
    assert.deepEqual(trackedConnectionsOf(REUSED), [`${HOST_SIDE}:36564>${REUSED}:8080`, `${HOST_SIDE}:42464>${REUSED}:8080`, `${REUSED}:51000>${HOST_SIDE}:7090`]);

    const { logger, lines } = recordingLogger();
    await new ConnectionTracking(conntrackRunner(PATH_ENV), logger).forgetConnectionsTo(REUSED);

    assert.deepEqual(trackedConnectionsOf(REUSED), [`${REUSED}:51000>${HOST_SIDE}:7090`]);
    assert.deepEqual(trackedConnectionsOf(OTHER_REPLICA), [`${HOST_SIDE}:40000>${OTHER_REPLICA}:8080`]);
    assert.deepEqual(lines, [], 'a delete that found entries is no failure');
  });

  it('takes an address with nothing tracked as done (conntrack exits 1 then), without a warning', async () => {
    const { logger, lines } = recordingLogger();
    await new ConnectionTracking(conntrackRunner(PATH_ENV), logger).forgetConnectionsTo(REUSED);
    assert.deepEqual(lines, []);
  });

  it('never fails a replica without conntrack-tools: it warns once, naming what to install', async () => {
    const { logger, lines } = recordingLogger();
    const tracking = new ConnectionTracking(conntrackRunner(PATH_ENV, '/nonexistent/conntrack'), logger);
    await tracking.forgetConnectionsTo(REUSED);
    await tracking.forgetConnectionsTo(OTHER_REPLICA);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]!.level, 40);
    assert.equal(lines[0]!.address, REUSED);
    assert.match(String(lines[0]!.msg), /ensure-deps\.sh installs conntrack/);
  });
});
