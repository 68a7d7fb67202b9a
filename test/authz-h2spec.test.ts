import { strict as assert } from 'node:assert';
import { CaseKit, SkippedCase, type H2specCase } from './support/h2spec/case.js';
import { GENERIC_CASES } from './support/h2spec/cases-generic.js';
import { HPACK_CASES } from './support/h2spec/cases-hpack.js';
import { HTTP2_FRAME_CASES } from './support/h2spec/cases-http2-frames.js';
import { HTTP2_MESSAGE_CASES } from './support/h2spec/cases-http2-messages.js';
import { HTTP2_STREAM_CASES } from './support/h2spec/cases-http2-streams.js';
import { checkBody, startCheckTarget, type CheckTarget } from './support/h2spec/check-target.js';
import { Flag, FrameType } from './support/h2spec/frames.js';
import { RawH2Client } from './support/h2spec/raw-client.js';
import { lenientPasses } from './support/h2spec/verify.js';

/**
 * The HTTP/2 conformance suite summerwind/h2spec (its generic, http2 and hpack sections,
 * at af83a65), ported case by case and run against authz's own HTTP/2 server serving
 * Envoy's Authorization service: each case sends h2spec's frames and passes by h2spec's own
 * rules (test/support/h2spec/verify.ts). h2spec's requests are Check calls
 * (test/support/h2spec/case.ts says how). Titles carry h2spec's id, so `h2spec http2/6.5.3/1`
 * runs the same case there, and its description and source file.
 */

/** h2spec's --timeout is 2 s; a shorter wait for a quiet connection changes no verdict here. */
const TIMEOUT_MS = 1_000;

const SECTIONS: [string, H2specCase[]][] = [
  ['generic: Generic tests for HTTP/2 server', GENERIC_CASES],
  ['http2: Hypertext Transfer Protocol Version 2 (HTTP/2)', [...HTTP2_STREAM_CASES, ...HTTP2_FRAME_CASES, ...HTTP2_MESSAGE_CASES]],
  ['hpack: HPACK: Header Compression for HTTP/2', HPACK_CASES],
];

describe('authz HTTP/2 server: the h2spec conformance suite', function () {
  let target: CheckTarget;
  const closedAfterOtherCode: string[] = [];

  before(async function () {
    target = await startCheckTarget();
  });

  after(function () {
    target.close();
    // h2spec passes a connection close after a GOAWAY or RST_STREAM with another code: say which cases did.
    if (closedAfterOtherCode.length > 0) console.log(`      passed by the connection closing after another error code:\n${closedAfterOtherCode.map((line) => `        ${line}`).join('\n')}`);
  });

  it('ports every case of the three sections: 44 generic, 95 http2 (one of them strict), 8 hpack', function () {
    assert.deepEqual(
      SECTIONS.map(([, cases]) => cases.length),
      [44, 95, 8],
    );
    const ids = SECTIONS.flatMap(([, cases]) => cases.map((c) => c.id));
    assert.equal(new Set(ids).size, ids.length, 'h2spec ids are unique');
  });

  it('sends real Check calls: the raw client\'s Check is decoded by proto-loader and answered with a CheckResponse and grpc-status trailers', async function () {
    assert.equal(checkBody(16_384).length, 16_384);
    const conn = await RawH2Client.dial(target.port, TIMEOUT_MS);
    try {
      await conn.handshake();
      const before = target.checks.length;
      new CaseKit(conn, target).sendCheck();
      const frames = [];
      for (;;) {
        const event = await conn.waitEvent();
        assert.equal(event.kind, 'frame', 'the answer arrives before the connection goes quiet');
        if (event.kind !== 'frame' || event.frame.streamId !== 1) continue;
        frames.push(event.frame);
        if (event.frame.flags & Flag.END_STREAM) break;
      }
      assert.deepEqual(
        frames.map((frame) => frame.type),
        [FrameType.HEADERS, FrameType.DATA, FrameType.HEADERS],
      );
      assert.ok(frames[1]!.length > 5, 'DATA holds a CheckResponse message');
      assert.equal(target.checks.length, before + 1);
      assert.equal((target.checks.at(-1) as { attributes: { request: { http: { host: string } } } }).attributes.request.http.host, 'h2spec.test');
    } finally {
      conn.close();
    }
  });

  for (const [section, cases] of SECTIONS) {
    describe(section, function () {
      for (const c of cases) {
        it(`${c.id} ${c.desc}${c.strict ? ' (strict)' : ''} [${c.source}]`, async function () {
          const conn = await RawH2Client.dial(target.port, TIMEOUT_MS);
          const noted = lenientPasses.length;
          try {
            await c.run(new CaseKit(conn, target));
            closedAfterOtherCode.push(...lenientPasses.splice(noted).map((note) => `${c.id}: ${note}`));
          } catch (error) {
            // h2spec's ErrSkipped: the server shows no behaviour to test. h2spec would skip;
            // here it fails, since authz must show every behaviour the suite tests.
            if (error instanceof SkippedCase) assert.fail(`h2spec would skip ${c.id} on this server: ${error.message}`);
            throw error;
          } finally {
            conn.close();
          }
        });
      }
    });
  }
});
