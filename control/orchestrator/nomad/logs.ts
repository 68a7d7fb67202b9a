import { levelOf } from '../podman/log-lines.js';
import type { LogEntry } from '../types.js';
import { ApiError, type ApiClient } from './http-client.js';
import { TASK } from './job-spec.js';
import { FrameParser, LineAssembler } from './log-frames.js';

export type LogStream = 'stdout' | 'stderr';

/** Bytes read from the end of each log for the recent view (~1000 short lines). */
export const RECENT_BYTES = 128 * 1024;

export interface LogLine {
  /** Byte offset of the line's start in the task's log. */
  offset: number;
  line: string;
}

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
 * The last `RECENT_BYTES` of one stream of one allocation. The offset counts bytes from
 * the end (origin=end); a log shorter than that is read from its start, as Nomad refuses
 * an offset past the file's size. The first line may be cut: it is dropped.
 */
export async function recentLines(nomad: ApiClient, allocationId: string, stream: LogStream, namespace: string): Promise<LogLine[]> {
  const read = async (origin: 'start' | 'end', offset: number) => {
    const response = await nomad.stream(logsPath(allocationId), {
      query: { task: TASK, type: stream, origin, offset, plain: false, follow: false, namespace },
      timeoutMs: 30_000,
    });
    const collected: LogLine[] = [];
    await readFrames(response.body, (lines) => collected.push(...lines));
    return collected;
  };
  try {
    const lines = await read('end', RECENT_BYTES);
    return lines[0]?.offset === 0 ? lines : lines.slice(1);
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) return read('start', 0);
    throw error;
  }
}

/**
 * Follows one stream from `offset` until `signal` aborts. Nomad never ends a follow
 * stream by itself, not even when the allocation stops: the caller watches the
 * allocation and aborts when it stops.
 */
export async function followLines(
  nomad: ApiClient,
  allocationId: string,
  stream: LogStream,
  namespace: string,
  offset: number,
  onLines: (lines: LogLine[]) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await nomad.stream(logsPath(allocationId), {
    query: { task: TASK, type: stream, origin: 'start', offset, plain: false, follow: true, namespace },
    timeoutMs: 24 * 3600_000,
    signal,
  });
  try {
    await readFrames(response.body, onLines);
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/**
 * Log entries of one allocation's stream. Nomad's log files carry no timestamps, so an
 * entry's id orders by the allocation's creation, the stream and the byte offset (stable
 * across reads, as SSE resume needs); its timestamp is when it was read.
 */
export function toEntries(lines: LogLine[], agentId: string, allocation: { ID: string; CreateTime: number }, stream: LogStream, readAt: Date): LogEntry[] {
  const created = String(allocation.CreateTime).padStart(20, '0');
  return lines
    .filter((line) => line.line.length > 0)
    .map((line) => ({
      id: `${created}-${allocation.ID}-${stream === 'stdout' ? 'o' : 'e'}${String(line.offset).padStart(15, '0')}`,
      agent_id: agentId,
      replica_id: allocation.ID,
      timestamp: readAt.toISOString(),
      level: levelOf(line.line, stream),
      message: line.line,
      source: stream,
    }));
}
