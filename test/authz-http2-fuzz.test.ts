import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { CLIENT_PREFACE, FrameType } from '../authz/http2/frames.js';
import { CompressionError, encodeHeaderBlock, HpackDecoder } from '../authz/http2/hpack.js';
import { frameMessage } from '../proto/grpc-wire.js';
import { loadAuthorizationService } from '../proto/load.js';
import { MIB, startAttackedAuthz, type AttackedAuthz, type MemoryFigures } from './support/attacked-authz.js';
import { connectTestRedis, EdgeProjectionWriter, envoyCheckRequest, uniqueAgentDomain } from './support/edge-authz.js';
import { frameSequence, hpackBlock, type FrameSequence } from './support/h2-arbitraries.js';
import { errorName, frame, H2Attacker, settingsFrame } from './support/h2-attacker.js';
import { indexedField } from './support/hpack-bytes.js';

/**
 * Property-based fuzzing of authz's HTTP/2 server (authz/http2/) with structure-aware input
 * (test/support/h2-arbitraries.ts): HPACK blocks fed to HpackDecoder, and frame sequences
 * fed to authz over a real socket, authz in a child process (test/support/authz-under-attack.ts).
 * The decoder throws nothing but CompressionError and its table never exceeds its size;
 * the server throws nothing, answers each connection or ends it with GOAWAY, and its memory
 * stays bounded. FUZZ_RUNS scales the runs (default 1, about 15 s in all); FUZZ_SEED
 * replays a failure that fast-check reported.
 */
const SCALE = Number(process.env.FUZZ_RUNS ?? 1);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
/** Bounds a property's whole check: the runs take a few seconds; this only ever cuts a long shrink of a failure short. */
const CHECK_LIMIT_MS = 40_000;
const SETTINGS_HEADER_TABLE_SIZE = 4_096;

/**
 * Runs a property; on failure reports the counterexample's error and the seed to replay it,
 * not fast-check's dump of a counterexample of many kilobytes.
 */
async function holds<T>(property: fc.IAsyncProperty<T> | fc.IProperty<T>, numRuns: number): Promise<number> {
  const details = await fc.check(property as fc.IAsyncProperty<T>, { numRuns: Math.ceil(numRuns * SCALE), ...(SEED === undefined ? {} : { seed: SEED }), plugins: [fc.interruptAfterTimeLimit(CHECK_LIMIT_MS)] });
  if (!details.failed) return details.numRuns;
  const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`failed after ${details.numRuns} cases (replay: FUZZ_SEED=${details.seed}; path ${details.counterexamplePath}): ${cause}`);
}

/**
 * The dynamic table's size as §4.1 counts it, read from outside: each entry from index 62
 * on, asked for with an Indexed Header Field until the decoder says there is none.
 */
function dynamicTableBytes(decoder: HpackDecoder): number {
  let bytes = 0;
  for (let index = 62; index < 62 + 10_000; index += 1) {
    let entry: [string, string] | undefined;
    try {
      decoder.decode(Buffer.from(indexedField(index)), (name, value) => (entry = [name, value]));
    } catch (error) {
      if (error instanceof CompressionError) return bytes;
      throw error;
    }
    bytes += entry![0].length + entry![1].length + 32;
    if (bytes > SETTINGS_HEADER_TABLE_SIZE) return bytes;
  }
  return bytes;
}

describe('authz HTTP/2 fuzz', function () {
  describe('HPACK blocks fed to HpackDecoder (RFC 7541)', function () {
    it('throw nothing but CompressionError, and leave the dynamic table within SETTINGS_HEADER_TABLE_SIZE after every block', async function () {
      this.timeout(60_000);
      const blocks = fc.array(hpackBlock, { minLength: 1, maxLength: 6 });
      const runs = await holds(
        fc.property(blocks, (sequence) => {
          const decoder = new HpackDecoder();
          for (const [i, block] of sequence.entries()) {
            let refused = false;
            try {
              decoder.decode(block, () => undefined);
            } catch (error) {
              if (!(error instanceof CompressionError)) throw new Error(`block ${i} (${block.toString('hex').slice(0, 200)}) threw ${String(error)}`);
              refused = true;
            }
            const size = dynamicTableBytes(decoder);
            if (size > SETTINGS_HEADER_TABLE_SIZE) throw new Error(`after block ${i} (${block.toString('hex').slice(0, 200)}) the dynamic table holds ${size} bytes`);
            const reported = (decoder as unknown as { dynamicTableSize?: number }).dynamicTableSize;
            if (reported !== undefined && reported !== size) throw new Error(`after block ${i} the decoder counts ${reported} bytes in its table, which holds ${size}`);
            // A COMPRESSION_ERROR ends the connection: nothing more is decoded on this context.
            if (refused) break;
          }
        }),
        3_000,
      );
      console.log(`      ${runs} sequences of blocks`);
    });
  });

  describe('frame sequences sent to authz over a socket (RFC 9113)', function () {
    this.timeout(90_000);
    const domain = uniqueAgentDomain('h2-fuzz');
    let redis: Redis;
    let projection: EdgeProjectionWriter;
    let target: AttackedAuthz;
    let head: Buffer;
    let body: Buffer;

    before(async function () {
      redis = connectTestRedis();
      projection = new EdgeProjectionWriter(redis);
      await projection.putAgent({ slug: 'fuzzed', access: 'public', callerRpm: 10_000_000, agentRpm: 10_000_000, upstreams: ['10.9.0.2:8080'] });
      target = await startAttackedAuthz({ server: 'authz', redisUrl: process.env.TEST_REDIS_URL!, redisKeyPrefix: redis.options.keyPrefix!, agentDomain: domain });
      const authorization = loadAuthorizationService().service;
      head = encodeHeaderBlock([[':method', 'POST'], [':scheme', 'http'], [':path', authorization.Check!.path], [':authority', 'authz'], ['content-type', 'application/grpc'], ['te', 'trailers']]);
      body = frameMessage(authorization.Check!.requestSerialize(envoyCheckRequest({ host: `fuzzed.${domain}` })));
    });

    after(async function () {
      await target?.stop();
      await projection.cleanUp();
      redis.disconnect();
    });

    /** Sends the preface, `sequence` and a PING of its own; resolves with how the connection ended, or why that is wrong. */
    async function exchange(sequence: FrameSequence): Promise<{ outcome: string; problem?: string }> {
      const attacker = await H2Attacker.connect(target.port, { preface: false });
      try {
        const probe = randomBytes(8);
        const opening = sequence.settingsFirst ? [CLIENT_PREFACE, settingsFrame([])] : [CLIENT_PREFACE];
        await attacker.write(Buffer.concat([...opening, ...sequence.frames, frame(FrameType.PING, 0, 0, probe)]));
        const answered = () => attacker.pingAckPayloads.includes(probe.toString('hex'));
        await attacker.waitFor(() => answered() || attacker.closed, 5_000);
        if (answered()) return { outcome: 'answered' };
        if (attacker.goAway) {
          await attacker.waitFor(() => attacker.closed, 2_000);
          return { outcome: `GOAWAY ${errorName(attacker.goAway.code)}`, ...(attacker.closed ? {} : { problem: `sent GOAWAY and kept the connection open: ${attacker.describe()}` }) };
        }
        if (attacker.closed && sequence.clientGoAway) return { outcome: 'closed after the client\'s GOAWAY' };
        return { outcome: 'neither', problem: `neither answered the PING nor closed with GOAWAY: ${attacker.describe()}` };
      } finally {
        attacker.destroy();
      }
    }

    it('never throw in authz, each get an answer or a GOAWAY, and leave its memory within 64 MiB', async function () {
      const before: MemoryFigures = await target.memory();
      const outcomes = new Map<string, number>();
      const runs = await holds(
        fc.asyncProperty(frameSequence(head, body), async (sequence) => {
          const { outcome, problem } = await exchange(sequence);
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          if (target.uncaught.length > 0 || target.exit) throw new Error(`authz threw: ${target.uncaught.join('\n') || JSON.stringify(target.exit)}\n${target.stderr()}`);
          if (problem) throw new Error(`${problem}\n  frames: ${sequence.frames.map((bytes) => bytes.subarray(0, 40).toString('hex')).join(' ')}`);
        }),
        400,
      );
      const after = await target.memory();
      const rss = after.rss - before.rss;
      const heap = after.heapUsed - before.heapUsed;
      console.log(`      ${runs} connections: ${[...outcomes].map(([outcome, count]) => `${outcome}×${count}`).join(', ')}; RSS ${(rss / MIB).toFixed(1)} MiB, heap ${(heap / MIB).toFixed(1)} MiB`);
      assert.ok(rss <= 64 * MIB, `authz's RSS grew by ${(rss / MIB).toFixed(1)} MiB over the fuzzed connections`);
      assert.ok(heap <= 64 * MIB, `authz's heap grew by ${(heap / MIB).toFixed(1)} MiB over the fuzzed connections`);
    });
  });
});
