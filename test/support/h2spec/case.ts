import { checkBody, checkHeaders, type CheckTarget } from './check-target.js';
import { Flag, FrameType } from './frames.js';
import type { HeaderField } from './hpack-encoder.js';
import { RawH2Client, type HeadersFrameParam, type PriorityParam } from './raw-client.js';

/**
 * One h2spec test case (spec/spec.go, TestCase) and what its port runs with.
 *
 * How h2spec's requests become Check calls, once for all cases:
 * - Headers are checkHeaders(): h2spec's CommonHeaders as a gRPC call. A case that sets
 *   :method to POST has it already; any other change or addition is the case's own.
 * - h2spec's GET ends the stream with its HEADERS frame. A Check cannot: it leaves
 *   END_STREAM off that frame and sends, once the header block is complete, one DATA frame
 *   with END_STREAM carrying the gRPC-framed CheckRequest (`sendCheck`, `checkData`).
 *   Where h2spec's POST sends the body "test", the CheckRequest is that body.
 * - Where a case's point is the frame right after a header block, or a frame that cuts
 *   into one, only h2spec's frames are sent, with h2spec's flags (each such case says so).
 * - DATA frames h2spec sends where no body can be (on an idle or closed stream, on stream 0)
 *   keep h2spec's "test".
 */

export interface H2specCase {
  /** h2spec's own id, as `h2spec http2/6.5.3/1` takes it: key/section/position. */
  id: string;
  /** The h2spec file it is ported from. */
  source: string;
  /** h2spec's Desc. */
  desc: string;
  /** Run by h2spec only with --strict. */
  strict?: boolean;
  run(kit: CaseKit): Promise<void>;
}

export type CaseBody = Omit<H2specCase, 'id' | 'source'>;

/** A TestGroup's cases, numbered as h2spec numbers them (from 1, in the order they are added). */
export function group(key: string, section: string, source: string, cases: CaseBody[]): H2specCase[] {
  return cases.map((body, i) => ({ ...body, id: `${key}/${section}/${i + 1}`, source }));
}

export const STREAM_ID = 1;
/** h2spec's usual PriorityParam: no dependency, weight 256. */
export const WEIGHT_256: PriorityParam = { streamDep: 0, exclusive: false, weight: 255 };
/** Bytes as h2spec writes them, in Go string literals: '\x40\x87…'. */
export const bytes = (latin1: string) => Buffer.from(latin1, 'latin1');
/** PING data as h2spec's [8]byte literals: `text`, then zeros. */
export const ping = (text = '') => Buffer.concat([Buffer.from(text, 'latin1'), Buffer.alloc(8 - text.length)]);
/** spec/util.go DummyHeaders: x-dummy0… each of h2spec's default --max-header-length, 4,000 x's. */
export const dummyHeaders = (count: number): HeaderField[] => Array.from({ length: count }, (_, i) => ({ name: `x-dummy${i}`, value: 'x'.repeat(4000) }));

/** What a case runs with: a fresh connection (not yet past the handshake), and the Check it sends. */
export class CaseKit {
  constructor(
    readonly conn: RawH2Client,
    private readonly target: CheckTarget,
  ) {}

  /** h2spec's CommonHeaders(c), as a Check. */
  headers(): HeaderField[] {
    return checkHeaders(this.target.authority);
  }

  /** The gRPC-framed CheckRequest; with `size`, exactly that many bytes. */
  body(size?: number): Buffer {
    return checkBody(size);
  }

  /** The Check's HEADERS frame alone (h2spec's frame parameters; END_STREAM only if given). Returns the header block. */
  openCheck(streamId = STREAM_ID, frame: Partial<HeadersFrameParam> & { fields?: HeaderField[] } = {}): Buffer {
    const { fields = this.headers(), ...param } = frame;
    const blockFragment = param.blockFragment ?? this.conn.encodeHeaders(fields);
    this.conn.writeHeaders({ endHeaders: true, ...param, streamId, blockFragment });
    return blockFragment;
  }

  /** The DATA frame that ends a Check on `streamId`: the CheckRequest, END_STREAM. */
  checkData(streamId = STREAM_ID): void {
    this.conn.writeData(streamId, true, this.body());
  }

  /**
   * h2spec's request (HEADERS with END_STREAM and END_HEADERS) as a Check: its HEADERS
   * (h2spec's frame parameters, END_STREAM off) and its DATA. Returns the header block.
   */
  sendCheck(streamId = STREAM_ID, frame: Partial<HeadersFrameParam> & { fields?: HeaderField[] } = {}): Buffer {
    const blockFragment = this.openCheck(streamId, { ...frame, endStream: false });
    this.checkData(streamId);
    return blockFragment;
  }

  /**
   * spec/util.go ServerDataLength: on a connection of its own, the DATA bytes of the answer
   * to one request (here a Check). Cases about flow control skip when it is too short to test.
   */
  async serverDataLength(): Promise<number> {
    const conn = await RawH2Client.dial(this.target.port, this.conn.timeoutMs);
    try {
      await conn.handshake();
      new CaseKit(conn, this.target).sendCheck();
      let length = 0;
      while (!conn.closed) {
        const event = await conn.waitEvent();
        if (event.kind !== 'frame') continue;
        const { type, flags } = event.frame;
        if (type === FrameType.DATA) length += event.frame.length;
        if ((type === FrameType.DATA || type === FrameType.HEADERS) && flags & Flag.END_STREAM) return length;
      }
      throw new Error('Unable to get server data length');
    } finally {
      conn.close();
    }
  }
}

/** spec.ErrSkipped: a case h2spec skips for a server that cannot show the behaviour. */
export class SkippedCase extends Error {
  override readonly name = 'SkippedCase';
}
