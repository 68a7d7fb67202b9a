import { cpus } from 'node:os';
import { startBenchControl } from './control-fixture.js';
import { controlApiClient } from './api-client.js';
import { runConcurrently, summarise, timed, writeResult } from './stats.js';

/**
 * Control API latency on real Postgres and Redis: creating agents (10,000, by 8
 * concurrent clients) and listing a page of 100 among them. The server runs in this
 * process, so figures include Koa, validation, knex and Postgres, not a network hop.
 */
const AGENTS = Number(process.env.BENCH_AGENTS ?? 10_000);
const CONCURRENCY = 8;
const LIST_REQUESTS = 500;

async function main(): Promise<void> {
  const control = await startBenchControl();
  const { db } = control;
  const base = control.apiUrl;

  try {
    const call = controlApiClient(base);
    const { token, user } = await call('POST', '/auth/register', undefined, { email: 'bench@example.com', password: 'bench password', name: 'Bench' });
    await db('accounts').where({ id: user.account_id }).update({ exempt: true });

    console.log(`creating ${AGENTS} agents with ${CONCURRENCY} concurrent clients`);
    const createSamples = await runConcurrently(AGENTS, CONCURRENCY, (i) =>
      call('POST', '/agents', token, { name: `agent ${i}`, tags: [i % 2 ? 'odd' : 'even'], metadata: { n: String(i) } }),
    );

    console.log(`listing a page of 100, ${LIST_REQUESTS} times, one client`);
    const listSamples: number[] = [];
    for (let i = 0; i < LIST_REQUESTS; i++) {
      const page = 1 + (i % (AGENTS / 100));
      listSamples.push(await timed(() => call('GET', `/agents?page_size=100&page=${page}`, token)));
    }
    const taggedSamples: number[] = [];
    for (let i = 0; i < 100; i++) taggedSamples.push(await timed(() => call('GET', '/agents?page_size=100&tag=odd', token)));

    const result = {
      benchmark: 'control-api',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      agents: AGENTS,
      create_agent: { concurrency: CONCURRENCY, ...summarise(createSamples) },
      list_agents_page_100: { concurrency: 1, ...summarise(listSamples) },
      list_agents_page_100_tag_filter: { concurrency: 1, ...summarise(taggedSamples) },
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${writeResult('control-api', result)}`);
  } finally {
    await control.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
