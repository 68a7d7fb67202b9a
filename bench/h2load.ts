import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { frameMessage } from '../proto/grpc-wire.js';
import { summarise, type LatencySummary } from './stats.js';

/**
 * Load from h2load (nghttp2's load generator, Debian's nghttp2-client) rather than from
 * Node: C on nghttp2, as Envoy is C++ on an HTTP/2 codec. On a two-core machine a Node
 * generator takes most of a core, so the server under test shares the other with Redis and
 * is preempted mid-request; h2load leaves it the CPU it would have next to Envoy. It sends
 * the same request each time and reads only HTTP statuses: whether a Check was allowed is
 * the caller's to count.
 */
export interface H2loadLoad {
  connections: number;
  /** HTTP/2 streams in flight per connection (HTTP/1.1: one request at a time, never pipelined). */
  streamsPerConnection: number;
  /** Closed loop: this many requests, `connections × streamsPerConnection` in flight. */
  count?: number;
  /**
   * Open loop instead: this many requests a second for `seconds`, after a second's warm-up,
   * over at least `perSecond / 100` connections (see the pacing in runH2load).
   */
  perSecond?: number;
  seconds?: number;
}

export interface H2loadRun {
  requests: number;
  /** Answered with HTTP status 200. */
  ok: number;
  per_second: number;
  /** Each request from when h2load started it to its answer's end (its --log-file). */
  latency: LatencySummary;
  /** h2load's own CPU time (user + system), warm-up included. */
  cpu_seconds: number;
}

/** gRPC Checks to an Authorization server at `address` (host:port), `request` a serialized CheckRequest. */
export function h2loadChecks(options: H2loadLoad & { address: string; request: Buffer }): Promise<H2loadRun> {
  return runH2load(options, (dir) => {
    const body = join(dir, 'check.bin');
    writeFileSync(body, frameMessage(options.request));
    return ['-d', body, '-H', 'content-type: application/grpc', '-H', 'te: trailers', `http://${options.address}/envoy.service.auth.v3.Authorization/Check`];
  });
}

/** HTTP/1.1 GET / to `address` (host:port) with `host` as its Host header, as a caller reaches an agent. */
export function h2loadGets(options: H2loadLoad & { address: string; host: string }): Promise<H2loadRun> {
  // h2load builds Host from :authority when it speaks HTTP/1.1.
  return runH2load({ ...options, streamsPerConnection: 1 }, () => ['--h1', '-H', `:authority: ${options.host}`, `http://${options.address}/`]);
}

/** Requests a second one paced connection sends: one per tick of h2load's 10 ms timer. */
const MAX_PACED_PER_CONNECTION = 100;
const WARM_UP_SECONDS = 1;

async function runH2load(load: H2loadLoad, target: (dir: string) => string[]): Promise<H2loadRun> {
  const dir = mkdtempSync(join(tmpdir(), 'h2load-'));
  try {
    const log = join(dir, 'requests.tsv');
    const paced = load.perSecond !== undefined;
    const connections = paced ? Math.max(load.connections, Math.ceil(load.perSecond! / MAX_PACED_PER_CONNECTION)) : load.connections;
    const pace = paced
      // --rps is per connection. Its timer fires at most every 10 ms and sends what is due
      // in one burst (nghttp2 src/h2load.cc, Client::connection_made: `rps_watcher.repeat =
      // std::max(0.01, 1. / config.rps)`): 8 connections at 13,000/s sent bursts of 16 each
      // and put a 3 ms floor under every latency. At 100/s a connection sends one request
      // per tick, and connections opened 1 ms apart (-r 1) spread the ticks over the 10 ms.
      ? ['--rps', String(load.perSecond! / connections), '-n', String(Math.round(load.perSecond! * (load.seconds! + WARM_UP_SECONDS))), '-r', '1', '--rate-period', '1ms']
      : ['-n', String(load.count)];
    // bash's `times` prints the shell's CPU and then its children's: h2load's, as "0m1.230s 0m0.410s".
    const { stdout } = await promisify(execFile)('bash', [
      '-c', '"$0" "$@"; status=$?; times; exit $status',
      h2loadBinary(), '-c', String(connections), '-m', String(load.streamsPerConnection), ...pace, '--log-file', log, ...target(dir),
    ], { maxBuffer: 1 << 20 });
    // "finished in 1.41s, 28373.30 req/s, 1.22MB/s"
    const perSecond = Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout)?.[1]);
    const childTimes = stdout.trim().split('\n').at(-1)!.split(' ').map((time) => /^(\d+)m([\d.]+)s$/.exec(time));
    const cpuSeconds = childTimes.reduce((sum, match) => sum + (match ? Number(match[1]) * 60 + Number(match[2]) : NaN), 0);
    // Tab-separated: start (µs since the epoch), HTTP status, µs to the end of the answer.
    const logged = readFileSync(log, 'utf8').trim().split('\n').map((line) => line.split('\t').map(Number));
    const firstStart = logged.reduce((first, row) => Math.min(first, row[0]!), Infinity);
    // An open-loop run's first second warms up (connections opening, code optimising) and is left out.
    const rows = paced ? logged.filter((row) => row[0]! >= firstStart + WARM_UP_SECONDS * 1e6) : logged;
    if (!Number.isFinite(perSecond) || !Number.isFinite(cpuSeconds) || rows.some((row) => !Number.isFinite(row[2]))) throw new Error(`cannot read h2load's output: ${stdout}`);
    return {
      requests: rows.length,
      ok: rows.filter((row) => row[1] === 200).length,
      // Paced: the rate the kept requests were started at, the warm-up left out.
      per_second: paced ? Math.round(rows.length / ((rows.reduce((last, row) => Math.max(last, row[0]!), 0) - rows[0]![0]!) / 1e6)) : Math.round(perSecond),
      latency: summarise(rows.map((row) => row[2]! / 1000)),
      cpu_seconds: cpuSeconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function h2loadBinary(): string {
  const path = '/usr/bin/h2load';
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    throw new Error('h2load not found: apt-get install -y nghttp2-client (scripts/ensure-deps.sh --bench-tools does it)');
  }
}
