import { measureEdgeOverhead } from './edge-overhead.js';
import { startEdgeFixture } from './edge-fixture.js';

/**
 * The local edge's part of `npm run bench` alone, for iterating on the edge; prints the
 * figures and writes nothing (the figures of record come from bench/authz.bench.ts).
 * BENCH_EDGE_CPU_PROF_DIR=<dir> also takes a --cpu-prof of the edge process there;
 * BENCH_EDGE_IN_FLIGHT=16 measures at 16 in flight only (comma-separated for more);
 * BENCH_EDGE_IN_PROCESS=1 measures the edge deciding in its own process (bench/inprocess-edge.ts).
 *
 *   flock /tmp/bench.lock node --import tsx bench/edge-overhead-only.ts
 */
const profileDir = process.env.BENCH_EDGE_CPU_PROF_DIR;
const inFlight = process.env.BENCH_EDGE_IN_FLIGHT?.split(',').map(Number);
const fixture = await startEdgeFixture('edge-overhead', 'bench');
try {
  const result = await measureEdgeOverhead({
    redis: fixture.redis,
    redisUrl: fixture.redisUrl,
    agentDomain: 'agents.localhost',
    edgeNodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    inFlight,
    edgeEntry: process.env.BENCH_EDGE_IN_PROCESS === '1' ? 'bench/inprocess-edge.ts' : undefined,
  });
  console.log(JSON.stringify(result));
} finally {
  await fixture.stop();
}
