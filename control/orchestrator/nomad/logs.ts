import { lineFields } from '../log-levels.js';
import type { LogEntry } from '../../domain/log-entry.js';
import type { ApiClient } from './http-client.js';
import { TASK } from './job-spec.js';
import { FrameParser, LineAssembler, type LogLine } from './log-frames.js';

export type LogStream = 'stdout' | 'stderr';

/** Bytes read from the end of each log for the recent view (~1000 short lines). */
export const RECENT_BYTES = 128 * 1024;

const logsPath = (allocationId: string) => `/v1/client/fs/logs/${encodeURIComponent(allocationId)}`;

async function readFrames(body: NodeJS.ReadableStream | null, onLines: (lines: LogLine[]) => void): Promise<void> {
  if (!body) return;
  const parser = new FrameParser();
  const lines = new LineAssembler();
  for await (const chunk of body) {
    for (const frame of parser.push(chunk as Buffer)) onLines(lines.push(frame));
  }
  onLines(lines.flush());
}

/**
 * The last `RECENT_BYTES` of one stream of one allocation, across its rotated files. The
 * offset counts bytes back from the end (origin=end); Nomad clamps it to the start of the
 * oldest file when the log is shorter (client/fs_endpoint.go findClosest), so a short log
 * is read whole. The first line may be cut unless it starts its file: it is dropped then.
 */
export async function recentLines(nomad: ApiClient, allocationId: string, stream: LogStream, namespace: string): Promise<LogLine[]> {
  const response = await nomad.stream(logsPath(allocationId), {
    query: { task: TASK, type: stream, origin: 'end', offset: RECENT_BYTES, plain: false, follow: false, namespace },
    timeoutMs: 30_000,
  });
  const lines: LogLine[] = [];
  await readFrames(response.body, (read) => lines.push(...read));
  return lines[0]?.offset === 0 ? lines : lines.slice(1);
}

/**
 * Log entries of one allocation's stream. Nomad's log files carry no timestamps, so an
 * entry's id orders by the allocation's creation, the stream, then where the line starts:
 * the rotated file's index and the byte offset in it (offsets restart in each file). That
 * is stable across reads and increases with each line written, as SSE resume needs; its
 * timestamp is when it was read.
 */
export function toEntries(lines: LogLine[], agentId: string, allocation: { ID: string; CreateTime: number }, stream: LogStream, readAt: Date): LogEntry[] {
  const created = String(allocation.CreateTime).padStart(20, '0');
  return lines
    .filter((line) => line.line.length > 0)
    .map((line) => {
      const { level, invocation_id } = lineFields(line.line, stream);
      return {
        id: `${created}-${allocation.ID}-${stream === 'stdout' ? 'o' : 'e'}${String(line.file).padStart(10, '0')}-${String(line.offset).padStart(15, '0')}`,
        agent_id: agentId,
        replica_id: allocation.ID,
        timestamp: readAt.toISOString(),
        level,
        message: line.line,
        source: stream,
        invocation_id,
      };
    });
}
