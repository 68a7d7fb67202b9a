import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { cpus, setPriority } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { FakeProvider } from '../runtime-image/test/helpers/fake-provider.js';
import { platformEnv } from '../runtime-image/test/helpers/runtime.js';
import { freePort } from '../scripts/lib/local-services.js';
import { treeCpuSeconds } from './process-cpu.js';
import { runConcurrently, summarise, writeResult, type LatencySummary } from './stats.js';

/**
 * What durable sessions (issue 37) add to an invoke: the default runtime with its sessions
 * in memory, then through agent services (the control API's listener, real Postgres and
 * Redis), in the same run. Each caller goes on with its own conversation turn after turn,
 * so every invoke reads a session and appends a turn to it. The added latency is the
 * remote runtime's percentile minus the memory one's.
 *
 * Laid out as deployed: each runtime, and the control API, is a process of its own. The
 * control API, its Postgres and its Redis are pinned to one CPU; the runtimes, the fake
 * provider and the callers to the other, the provider and the callers at a lower priority
 * (LOAD_NICE). So neither what the control plane costs in CPU nor what the load generator
 * does shows up as the runtime's wait, as it would not on a cluster, where they are other machines.
 *
 * Five loads:
 * - `model_paced`: 50 concurrent conversations against a provider that answers in
 *   MODEL_MS, as a fast model does. This is the load the issue's goal is judged on: 50
 *   invokes in flight, each mostly waiting on its model.
 * - `model_varied`: the same, the model answering in 100 to 300 ms, evenly spread, as real
 *   models vary. With every answer taking exactly MODEL_MS, the fifty conversations stay in
 *   step and all arrive within a millisecond, every 200 ms: model_paced is that worst case,
 *   model_varied the arrivals spread out, its callers starting spread over MODEL_MS so that
 *   no round begins in step either. Reported beside the judged figure, not instead of it.
 * - `saturated`: the same 50 against a provider that answers at once. The runtime's CPU
 *   is then the bottleneck in both runs, and the difference is the CPU a session costs
 *   the runtime, multiplied by the queue of 50.
 * - `one_caller`: one conversation, the provider answering at once: a session's cost
 *   when nothing waits in a queue.
 * - `long_conversation`: one conversation of large turns (LONG_TURN_CHARS), the provider
 *   answering at once: what a session costs once it holds most of a megabyte, when a turn must
 *   still cost what it does in a short one (a 304 read and the turn's append) but for the
 *   trims, which rewrite it whole every dozen turns.
 * `model_paced` also runs through a third runtime whose agent services are Sessions API v1
 * in a Map behind bare node:http (sessions-floor-services.ts), on the control API's CPU:
 * `added_by_the_http_calls_alone` is what the runtime's two calls per invoke cost here
 * whatever stores the sessions, the floor under `added_by_durable_sessions`.
 * `model_paced` also runs through a fourth runtime: the durable one with traces on, as replicas
 * run by default (issue 38). `added_by_traces` is its end-to-end difference from the untraced
 * one, and `runtime_cpu_ms_per_invoke_traced` and `control_plane_cpu_ms_per_invoke_traced`
 * what recording and storing an invoke's spans cost beside the untraced figures.
 * `added_session_time_of_first_turns` is the same difference over each conversation's first
 * turn alone, which reads a session not there yet and creates it: one turn in 40, so what
 * decides the judged p99 when first turns are the slowest. `added_session_time_of_later_turns`
 * is the difference over every other turn: what the judged figure would be if first turns
 * cost what the others do.
 * `control_plane_cpu_ms_per_invoke` is the CPU the control API, its Postgres and its Redis
 * spent per invoke of the durable runtime (from /proc, process-cpu.ts), and
 * `floor_cpu_ms_per_invoke` the floor's: unlike the latencies, which move by ±10 ms from
 * run to run with how the 50 arrivals happen to line up, these hold to a few percent.
 * `runtime_cpu_ms_per_invoke` is each runtime's own, also from /proc: the work its event
 * loop does per invoke, which a session call's answer waits behind when 50 invokes arrive
 * together. `callers_and_provider_cpu_ms_per_invoke` is this process's (the fifty callers and
 * the fake provider), which shares the runtimes' CPU and so also stands between a session
 * call's answer and the runtime. The runtimes run compiled (dist/main.js), as in the image, not through tsx.
 * Goal (issue 37): added p50 ≤ 2 ms, p99 ≤ 10 ms. The in-memory, durable and floor runtimes
 * run with RUNTIME_TRACES=off: without agent services there is no tracing to compare with, so
 * what tracing costs is the fourth runtime's, reported apart (`added_by_traces`).
 *
 * BENCH_UNPINNED=1 lets every process run on any CPU; BENCH_CONTROL_NODE_ARGS passes
 * arguments to the control API's node (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), and
 * BENCH_RUNTIME_NODE_ARGS to each runtime's.
 */
const CONCURRENCY = 50;
const TURNS_PER_CALLER = Number(process.env.BENCH_SESSION_TURNS ?? 40);
const WARMUP_TURNS = 4;
/** Each load's turns are run in this many rounds, the runtimes taking turns (compare). */
const ROUNDS = 4;
const MODEL_MS = 200;
/** model_varied's answers take MODEL_MS ± this, evenly spread. */
const MODEL_SPREAD_MS = 100;
/**
 * long_conversation's turns: each of 16,000 characters, so that the conversation reaches the
 * runtime's default 50 turns (RUNTIME_MAX_TURNS_PER_SESSION) at about 0.8 MB, near
 * SESSION_MAX_BYTES' default 1 MiB, and is then trimmed to 3/4 every dozen turns. 200 turns,
 * whatever BENCH_SESSION_TURNS says, so that it always gets there.
 */
const LONG_TURN_CHARS = 16_000;
const LONG_CONVERSATION_TURNS = 200;
/** How long a traced round waits after its last invoke, for the spans still to be sent (the runtime sends every second) and stored. */
const TRACE_SETTLE_MS = 1_500;

const RUNTIME_CPU = 0;
const RUNTIME_DIR = fileURLToPath(new URL('../runtime-image', import.meta.url));
const RUNTIME_TSC = join(RUNTIME_DIR, 'node_modules/typescript/bin/tsc');
const CONTROL_CPU = 1;
/**
 * The niceness of this process, the fifty callers and the fake provider, which share the
 * runtimes' CPU. On a cluster they are not on the runtime's machine at all. At the same
 * priority the scheduler shares the CPU between this process and a runtime fairly, and a
 * session call's answer that arrives while this process runs waits for the runtime's turn:
 * a wait the deployment would not have. BENCH_LOAD_NICE=0 measures with it.
 */
const LOAD_NICE = Number(process.env.BENCH_LOAD_NICE ?? 10);

/** Session times of a runtime's invokes, in ms: all of them, and apart those that began a conversation and the rest. */
interface SessionTimes {
  all: number[];
  first: number[];
  later: number[];
}

/** Conversations through one runtime: `callers` of them, `turns` each. */
interface Conversations {
  turns: number;
  callers: number;
  /** Where each invoke's session time goes; not kept when absent (a warm-up). */
  times?: SessionTimes;
  /** Whether these turns begin their conversations, so the first of each counts as a first turn. */
  firstRound?: boolean;
  /** The caller's input, padded to this many characters. */
  inputChars?: number;
  /** The callers start spread over this many ms (runConcurrently), not all at once. */
  staggerMs?: number;
}

/** One load of compare: `callers` conversations of `turns` turns, the model answering in modelMs ± modelSpreadMs (0: at once); withFloor runs the floor's runtime too. */
interface Load {
  modelMs: number;
  modelSpreadMs?: number;
  turns: number;
  callers: number;
  withFloor?: boolean;
  /** Also through the durable runtime with traces on: what tracing adds. */
  withTraces?: boolean;
  /** The size of each turn as text, half the caller's input and half the model's answer; a word each when not given. */
  turnChars?: number;
}

async function main(): Promise<void> {
  compileRuntime();
  const pinned = cpus().length >= 2 && hasTaskset() && process.env.BENCH_UNPINNED === undefined;
  if (pinned) pin(process.pid, RUNTIME_CPU);
  const control = await startControl(pinned);
  const provider = await FakeProvider.start();
  provider.recording = false;
  const runtimes: ChildProcess[] = [];
  const stops: (() => Promise<void>)[] = [];

  try {
    // Without agent services the runtime traces nothing, and with them it sends every invoke's
    // spans there (issue 38): both run untraced, so the difference is what sessions add alone.
    const base = platformEnv(provider, 'openai', { LOG_LEVEL: 'error', RUNTIME_TRACES: 'off' });
    const memory = await startRuntimeProcess(base, pinned, runtimes);
    const remote = await startRuntimeProcess({ ...base, AGENT_SERVICES_URL: control.info.agentServicesUrl, AGENT_SERVICES_TOKEN_FILE: control.info.tokenFile }, pinned, runtimes);
    const [memoryPid, remotePid] = runtimes.map((runtime) => runtime.pid!);
    const floorServices = await startFloorServices(pinned);
    stops.push(floorServices.close);
    const floorRuntime = await startRuntimeProcess({ ...base, AGENT_SERVICES_URL: floorServices.info.agentServicesUrl, AGENT_SERVICES_TOKEN_FILE: floorServices.info.tokenFile }, pinned, runtimes);
    const floorPid = runtimes[2]!.pid;
    // The durable runtime again with traces on, as a replica runs by default: its spans go to the same control API.
    const traced = await startRuntimeProcess({ ...base, RUNTIME_TRACES: 'on', AGENT_SERVICES_URL: control.info.agentServicesUrl, AGENT_SERVICES_TOKEN_FILE: control.info.tokenFile }, pinned, runtimes);
    const tracedPid = runtimes[3]!.pid;
    // Started first, the runtimes, the control API and the floor keep the default priority.
    if (pinned) lowerOwnPriority(LOAD_NICE);

    /**
     * The invokes' latencies, each invoke's session time (read and write, from its Server-Timing)
     * kept in `times`: in `first` when it began its conversation (the first turn of the first round), in `later` otherwise.
     */
    const conversation = async (runtimeUrl: string, label: string, { turns, callers, times, firstRound = true, inputChars = 0, staggerMs = 0 }: Conversations) => {
      const sessions = Array.from({ length: callers }, (_, caller) => `${label}-${caller}`);
      return runConcurrently(turns * callers, callers, async (i) => {
        const input = `turn ${Math.floor(i / callers)}`;
        const body = JSON.stringify({ input: input.padEnd(inputChars, ' and so on'), session_id: sessions[i % callers] });
        const response = await fetch(`${runtimeUrl}/invoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        if (response.status !== 200) throw new Error(`${label}: ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
        const ms = sessionTimeOf(response.headers.get('server-timing'));
        times?.all.push(ms);
        (firstRound && i < callers ? times?.first : times?.later)?.push(ms);
      }, { staggerMs });
    };
    /**
     * One load through each runtime, each warmed up first. The runtimes take turns, a round
     * each, ROUNDS times: a drift of the machine over the run then falls on all of them alike,
     * where one runtime's whole run after the other's would carry it into the difference.
     */
    const compare = async (name: string, { modelMs, modelSpreadMs = 0, turns, callers, withFloor = false, withTraces = false, turnChars = 0 }: Load) => {
      // Each answer's delay drawn evenly from modelMs ± modelSpreadMs.
      const delayMs = modelSpreadMs > 0 ? () => modelMs - modelSpreadMs + Math.random() * 2 * modelSpreadMs : modelMs;
      const text = 'noted'.padEnd(turnChars / 2, ', and then');
      provider.defaultReply = modelMs > 0 ? { text, delayMs } : { text };
      const spread = modelSpreadMs > 0 ? ` ± ${modelSpreadMs}` : '';
      console.log(`${name}: ${turns} turns of ${callers} conversation(s), the model answering in ${modelMs}${spread} ms, in ${ROUNDS} rounds`);
      const runs = [
        { key: 'memory', url: memory, pid: memoryPid! },
        { key: 'remote', url: remote, pid: remotePid! },
        ...(withFloor ? [{ key: 'floor', url: floorRuntime, pid: floorPid! }] : []),
        ...(withTraces ? [{ key: 'traced', url: traced, pid: tracedPid! }] : []),
      ];
      const samples = new Map(runs.map((run) => [run.key, [] as number[]]));
      // Split too: the first turns create the sessions, the slowest through agent services, one in `turns` of all, so at 40 they are the p99.
      const sessionTimes = new Map(runs.map((run) => [run.key, { all: [], first: [], later: [] } as SessionTimes]));
      // CPU the store's side spent while each runtime ran: the control API with Postgres and Redis, or the floor's process.
      const storeCpuSeconds = new Map(runs.map((run) => [run.key, 0]));
      const storeCpu = (key: string) => (key === 'remote' || key === 'traced' ? control.cpuSeconds() : key === 'floor' ? floorServices.cpuSeconds() : 0);
      // And the runtime's own: what its event loop spends per invoke is what a session call's answer waits behind.
      const runtimeCpuSeconds = new Map(runs.map((run) => [run.key, 0]));
      // And this process's, the callers' and the provider's, which share the runtimes' CPU: on a cluster they are elsewhere.
      const loadCpuMs = new Map(runs.map((run) => [run.key, 0]));
      // A spread model spreads arrivals out, but only once the callers are under way: each round's
      // first turns would come all at once, a tenth of the samples in lockstep. So the callers of
      // such a load start spread over one model answer's time.
      const staggerMs = modelSpreadMs > 0 ? modelMs : 0;
      for (const run of runs) await conversation(run.url, `${name}-warm-${run.key}`, { turns: WARMUP_TURNS, callers, inputChars: turnChars / 2, staggerMs });
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const run of runs) {
          const cpuBefore = storeCpu(run.key);
          const runtimeCpuBefore = treeCpuSeconds(run.pid);
          const loadCpuBefore = process.cpuUsage();
          samples.get(run.key)!.push(...(await conversation(run.url, `${name}-${run.key}`, { turns: turns / ROUNDS, callers, times: sessionTimes.get(run.key), firstRound: round === 0, inputChars: turnChars / 2, staggerMs })));
          // The last spans are sent within a second of their invoke (the runtime's export interval), and stored on arrival: their CPU is the round's.
          if (run.key === 'traced') await sleep(TRACE_SETTLE_MS);
          storeCpuSeconds.set(run.key, storeCpuSeconds.get(run.key)! + storeCpu(run.key) - cpuBefore);
          runtimeCpuSeconds.set(run.key, runtimeCpuSeconds.get(run.key)! + treeCpuSeconds(run.pid) - runtimeCpuBefore);
          const loadCpu = process.cpuUsage(loadCpuBefore);
          loadCpuMs.set(run.key, loadCpuMs.get(run.key)! + (loadCpu.user + loadCpu.system) / 1000);
        }
      }
      const cpuMsPerInvoke = (key: string) => round((storeCpuSeconds.get(key)! * 1000) / samples.get(key)!.length);
      const runtimeCpuMsPerInvoke = (key: string) => round((runtimeCpuSeconds.get(key)! * 1000) / samples.get(key)!.length);
      const loadCpuMsPerInvoke = (key: string) => round(loadCpuMs.get(key)! / samples.get(key)!.length);
      const inMemory = summarise(samples.get('memory')!);
      const throughServices = summarise(samples.get('remote')!);
      const floor = withFloor ? summarise(samples.get('floor')!) : undefined;
      const sessionInMemory = summarise(sessionTimes.get('memory')!.all);
      const sessionThroughServices = summarise(sessionTimes.get('remote')!.all);
      const addedOf = (turns: 'first' | 'later') => added(summarise(sessionTimes.get('memory')![turns]), summarise(sessionTimes.get('remote')![turns]));
      return {
        concurrency: callers,
        model_ms: modelMs,
        ...(modelSpreadMs > 0 ? { model_spread_ms: modelSpreadMs } : {}),
        turns_per_conversation: turns,
        ...(turnChars > 0 ? { turn_chars: turnChars } : {}),
        session_read_and_write_in_memory: sessionInMemory,
        session_read_and_write_through_agent_services: sessionThroughServices,
        added_session_time: added(sessionInMemory, sessionThroughServices),
        added_session_time_of_first_turns: addedOf('first'),
        added_session_time_of_later_turns: addedOf('later'),
        invoke_sessions_in_memory: inMemory,
        invoke_sessions_through_agent_services: throughServices,
        added_by_durable_sessions: added(inMemory, throughServices),
        control_plane_cpu_ms_per_invoke: cpuMsPerInvoke('remote'),
        runtime_cpu_ms_per_invoke: { sessions_in_memory: runtimeCpuMsPerInvoke('memory'), through_agent_services: runtimeCpuMsPerInvoke('remote'), ...(floor ? { through_floor: runtimeCpuMsPerInvoke('floor') } : {}) },
        callers_and_provider_cpu_ms_per_invoke: Object.fromEntries(runs.map((run) => [run.key, loadCpuMsPerInvoke(run.key)])),
        ...(floor
          ? {
              invoke_sessions_through_floor: floor,
              added_by_the_http_calls_alone: added(inMemory, floor),
              session_read_and_write_through_floor: summarise(sessionTimes.get('floor')!.all),
              added_session_time_by_the_http_calls_alone: added(sessionInMemory, summarise(sessionTimes.get('floor')!.all)),
              floor_cpu_ms_per_invoke: cpuMsPerInvoke('floor'),
            }
          : {}),
        ...(withTraces
          ? {
              invoke_traced: summarise(samples.get('traced')!),
              added_by_traces: added(throughServices, summarise(samples.get('traced')!)),
              runtime_cpu_ms_per_invoke_traced: runtimeCpuMsPerInvoke('traced'),
              control_plane_cpu_ms_per_invoke_traced: cpuMsPerInvoke('traced'),
            }
          : {}),
      };
    };

    const modelPaced = await compare('model_paced', { modelMs: MODEL_MS, turns: TURNS_PER_CALLER, callers: CONCURRENCY, withFloor: true, withTraces: true });
    const modelVaried = await compare('model_varied', { modelMs: MODEL_MS, modelSpreadMs: MODEL_SPREAD_MS, turns: TURNS_PER_CALLER, callers: CONCURRENCY, withFloor: true });
    const saturated = await compare('saturated', { modelMs: 0, turns: TURNS_PER_CALLER, callers: CONCURRENCY });
    const oneCaller = await compare('one_caller', { modelMs: 0, turns: TURNS_PER_CALLER * 5, callers: 1 });
    const longConversation = await compare('long_conversation', { modelMs: 0, turns: LONG_CONVERSATION_TURNS, callers: 1, turnChars: LONG_TURN_CHARS });
    const { added_session_time: judged } = modelPaced;
    const result = {
      benchmark: 'sessions',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      traces: 'off, but in the traced runtime of model_paced',
      layout: pinned
        ? `control API, Postgres and Redis on CPU ${CONTROL_CPU}; runtimes, provider and callers on CPU ${RUNTIME_CPU}, the provider and callers at nice ${LOAD_NICE}`
        : 'unpinned (no taskset or one CPU)',
      sessions_stored: await control.sessionsStored(),
      model_paced: modelPaced,
      model_varied: modelVaried,
      saturated,
      one_caller: oneCaller,
      long_conversation: longConversation,
      goal: { judged_on: 'model_paced.added_session_time', p50_ms: 2, p99_ms: 10 },
      met: judged.p50_ms <= 2 && judged.p99_ms <= 10,
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${writeResult('sessions', result)}`);
  } finally {
    for (const runtime of runtimes) runtime.kill();
    for (const stop of stops) await stop();
    await provider.close();
    await control.close();
  }
}

const round = (value: number) => Math.round(value * 1000) / 1000;

/** An invoke's session read and write, in ms, from the runtime's Server-Timing (runtime-image/src/http/invoke-route.ts). */
function sessionTimeOf(header: string | null): number {
  const durations = new Map((header ?? '').split(',').map((metric) => [metric.trim().split(';')[0], Number(/;dur=([\d.]+)/.exec(metric)?.[1])]));
  const read = durations.get('session-read');
  const write = durations.get('session-write');
  if (read === undefined || write === undefined || Number.isNaN(read) || Number.isNaN(write)) throw new Error(`the runtime sent no session timings: Server-Timing ${header}`);
  return read + write;
}
const added = (memory: LatencySummary, remote: LatencySummary) => ({ p50_ms: round(remote.p50_ms - memory.p50_ms), p99_ms: round(remote.p99_ms - memory.p99_ms) });

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Every thread of `pid` on `cpu` (its children inherit it). */
function pin(pid: number, cpu: number): void {
  execFileSync('taskset', ['-a', '-cp', String(cpu), String(pid)], { stdio: 'ignore' });
}

function spawnNode(args: string[], env: NodeJS.ProcessEnv, cpu: number | undefined): ChildProcess {
  const command = cpu === undefined ? [process.execPath, ...args] : ['taskset', '-c', String(cpu), process.execPath, ...args];
  return spawn(command[0]!, command.slice(1), { env, stdio: ['pipe', 'pipe', 'inherit'] });
}

/** Every thread of this process at niceness `nice` (Linux sets it per thread: setpriority(2) on a thread id). */
function lowerOwnPriority(nice: number): void {
  for (const threadId of readdirSync('/proc/self/task')) setPriority(Number(threadId), nice);
}

/** Arguments for a node process from the environment variable `name`, space-separated. */
const nodeArgs = (name: string) => (process.env[name] ?? '').split(' ').filter(Boolean);

/** bench/sessions-control.ts in its own process: where its agent services listen, and the agent's token file. */
async function startControl(pinned: boolean) {
  const child = spawnNode([...nodeArgs('BENCH_CONTROL_NODE_ARGS'), '--import', 'tsx', 'bench/sessions-control.ts'], process.env, pinned ? CONTROL_CPU : undefined);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => JSON.parse(((await lines.next()).value as string | undefined) ?? 'null');
  const info = (await next()) as { agentServicesUrl: string; tokenFile: string; postgresPid: number } | null;
  if (!info) throw new Error('the control API process ended before it was ready');
  return {
    info,
    /** CPU seconds of the control API's process, its Redis (a child) and its Postgres, so far. */
    cpuSeconds: () => treeCpuSeconds(child.pid!) + treeCpuSeconds(info.postgresPid),
    sessionsStored: async () => {
      child.stdin!.write('count\n');
      return ((await next()) as { sessions: number }).sessions;
    },
    close: async () => {
      child.stdin!.end();
      await once(child, 'exit');
    },
  };
}

/** bench/sessions-floor-services.ts in its own process, on the control API's CPU. */
async function startFloorServices(pinned: boolean) {
  const child = spawnNode(['--import', 'tsx', 'bench/sessions-floor-services.ts'], process.env, pinned ? CONTROL_CPU : undefined);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const info = JSON.parse(((await lines.next()).value as string | undefined) ?? 'null') as { agentServicesUrl: string; tokenFile: string } | null;
  if (!info) throw new Error('the floor services process ended before it was ready');
  return {
    info,
    cpuSeconds: () => treeCpuSeconds(child.pid!),
    close: async () => {
      child.stdin!.end();
      await once(child, 'exit');
    },
  };
}

/**
 * The runtime compiled, as the image runs it (runtime-image/scripts/build-image.sh): run
 * through tsx, its source maps are parsed and its modules loaded through a hook, which is
 * not the code a replica runs.
 */
function compileRuntime(): void {
  execFileSync(process.execPath, [RUNTIME_TSC, '-p', 'tsconfig.build.json'], { cwd: RUNTIME_DIR, stdio: 'inherit' });
}

/** The runtime's dist/main.js, configured by `env` as the platform would, listening on a free port: its URL once /health answers. */
async function startRuntimeProcess(env: Record<string, string>, pinned: boolean, started: ChildProcess[]): Promise<string> {
  const port = await freePort();
  const child = spawnNode([...nodeArgs('BENCH_RUNTIME_NODE_ARGS'), join(RUNTIME_DIR, 'dist/main.js')], { ...process.env, ...env, PORT: String(port) }, pinned ? RUNTIME_CPU : undefined);
  child.stdout!.resume();
  started.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let waited = 0; waited < 30_000; waited += 100) {
    if (child.exitCode !== null) throw new Error(`the runtime exited with ${child.exitCode}`);
    const healthy = await fetch(`${url}/health`).then((response) => response.ok, () => false);
    if (healthy) return url;
    await sleep(100);
  }
  throw new Error('the runtime did not answer /health within 30 s');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
