import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { AgentTokens } from '../control/crypto/agent-token.js';
import { FakeProvider } from '../runtime-image/test/helpers/fake-provider.js';
import { platformEnv, startRuntime, type TestRuntime } from '../runtime-image/test/helpers/runtime.js';
import { controlApiClient } from './api-client.js';
import { startBenchControl } from './control-fixture.js';
import { runConcurrently, summarise, writeResult } from './stats.js';

/**
 * What durable sessions (issue 37) add to an invoke: the default runtime against a fake
 * provider that answers at once, its sessions in memory, then through the agent services
 * (the control API's listener, real Postgres and Redis), in the same run. 50 callers, each
 * going on with its own conversation turn after turn, so every invoke reads a session and
 * appends a turn to it. The added latency is the remote run's percentile minus the memory
 * run's. Everything runs in this one process (runtime, control API, callers), so both runs
 * share the same contention; the machine's two cores also run Postgres and Redis.
 * Goal (issue 37): added p50 ≤ 2 ms, p99 ≤ 10 ms.
 */
const CONCURRENCY = 50;
const TURNS_PER_CALLER = Number(process.env.BENCH_SESSION_TURNS ?? 40);
const WARMUP_TURNS = 4;

async function main(): Promise<void> {
  const control = await startBenchControl();
  const { config, db, workDir } = control;
  const provider = await FakeProvider.start();
  provider.recording = false;
  provider.defaultReply = { text: 'noted' };
  const runtimes: TestRuntime[] = [];

  try {
    const call = controlApiClient(control.apiUrl);
    const { token, user } = await call('POST', '/auth/register', undefined, { email: 'bench@example.com', password: 'bench password', name: 'Bench' });
    await db('accounts').where({ id: user.account_id }).update({ exempt: true });
    const agent = await call('POST', '/agents', token, { name: 'remembers' });
    const tokenFile = join(workDir, 'token');
    writeFileSync(tokenFile, new AgentTokens(config.masterKeys, config.agentServices.tokenTtlSeconds).mint(agent.id, 'bench-replica', new Date()).token);

    const memory = await startRuntime(platformEnv(provider, 'openai', { LOG_LEVEL: 'error' }));
    const remote = await startRuntime(platformEnv(provider, 'openai', {
      LOG_LEVEL: 'error',
      AGENT_SERVICES_URL: control.agentServicesUrl,
      AGENT_SERVICES_TOKEN_FILE: tokenFile,
    }));
    runtimes.push(memory, remote);

    const conversation = async (runtime: TestRuntime, label: string, turns: number, callers = CONCURRENCY) => {
      const sessions = Array.from({ length: callers }, (_, caller) => `${label}-${caller}`);
      return runConcurrently(turns * callers, callers, async (i) => {
        const body = JSON.stringify({ input: `turn ${Math.floor(i / callers)}`, session_id: sessions[i % callers] });
        const response = await fetch(`${runtime.url}/invoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        if (response.status !== 200) throw new Error(`${label}: ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
      });
    };
    console.log(`warming up: ${WARMUP_TURNS} turns of ${CONCURRENCY} conversations each way`);
    await conversation(memory, 'warm-memory', WARMUP_TURNS);
    await conversation(remote, 'warm-remote', WARMUP_TURNS);
    console.log(`${TURNS_PER_CALLER} turns of ${CONCURRENCY} conversations, sessions in memory`);
    const inMemory = summarise(await conversation(memory, 'memory', TURNS_PER_CALLER));
    console.log(`${TURNS_PER_CALLER} turns of ${CONCURRENCY} conversations, sessions through the agent services`);
    const throughServices = summarise(await conversation(remote, 'remote', TURNS_PER_CALLER));
    // One caller: what a session costs an invoke when nothing waits in a queue.
    console.log(`${TURNS_PER_CALLER * 5} turns of one conversation each way`);
    const aloneInMemory = summarise(await conversation(memory, 'alone-memory', TURNS_PER_CALLER * 5, 1));
    const aloneThroughServices = summarise(await conversation(remote, 'alone-remote', TURNS_PER_CALLER * 5, 1));
    const stored = await db('agent_sessions').where({ agent_id: agent.id }).count<{ count: string }[]>('* as count');

    const added = { p50_ms: round(throughServices.p50_ms - inMemory.p50_ms), p99_ms: round(throughServices.p99_ms - inMemory.p99_ms) };
    const result = {
      benchmark: 'sessions',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      concurrency: CONCURRENCY,
      turns_per_conversation: TURNS_PER_CALLER,
      sessions_stored: Number(stored[0]?.count ?? 0),
      invoke_sessions_in_memory: inMemory,
      invoke_sessions_through_agent_services: throughServices,
      added_by_durable_sessions: added,
      one_caller: {
        invoke_sessions_in_memory: aloneInMemory,
        invoke_sessions_through_agent_services: aloneThroughServices,
        added_by_durable_sessions: { p50_ms: round(aloneThroughServices.p50_ms - aloneInMemory.p50_ms), p99_ms: round(aloneThroughServices.p99_ms - aloneInMemory.p99_ms) },
      },
      goal: { p50_ms: 2, p99_ms: 10 },
      met: added.p50_ms <= 2 && added.p99_ms <= 10,
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${writeResult('sessions', result)}`);
  } finally {
    for (const runtime of runtimes) await runtime.close();
    await provider.close();
    await control.close();
  }
}

const round = (value: number) => Math.round(value * 1000) / 1000;

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
