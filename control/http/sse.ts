import { PassThrough } from 'node:stream';
import type { StreamLease } from '../services/open-streams.js';

export interface SseEvent {
  event: string;
  data: unknown;
  id?: string;
}

export interface SseOptions {
  /** A comment line this often keeps proxies from closing an idle stream. */
  heartbeatMs?: number;
  /** The caller's hold on its access (OpenStreams.open): when it ends, `event: access-ended` with its reason, and the stream ends. */
  lease?: StreamLease;
}

/**
 * A server-sent event stream fed by `source`; the source is stopped when the client leaves,
 * or when the lease's access ends.
 */
export function sseStream(source: (signal: AbortSignal) => AsyncIterable<SseEvent>, { heartbeatMs = 15_000, lease }: SseOptions = {}): { stream: PassThrough; abort: () => void } {
  const stream = new PassThrough();
  const controller = new AbortController();
  const write = (text: string) => {
    if (stream.writable) stream.write(text);
  };
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), heartbeatMs);
  const accessEnded = () => {
    write(frame({ event: 'access-ended', data: lease?.signal.reason }));
    finish();
  };
  const finish = () => {
    clearInterval(heartbeat);
    controller.abort();
    lease?.signal.removeEventListener('abort', accessEnded);
    lease?.release();
    if (stream.writable) stream.end();
  };
  stream.on('close', finish);
  write(': connected\n\n');
  if (lease?.signal.aborted) accessEnded();
  else lease?.signal.addEventListener('abort', accessEnded, { once: true });

  void (async () => {
    try {
      for await (const item of source(controller.signal)) {
        if (controller.signal.aborted) break;
        write(frame(item));
      }
    } catch (error) {
      if (!controller.signal.aborted) write(frame({ event: 'error', data: { message: (error as Error).message } }));
    } finally {
      finish();
    }
  })();
  return { stream, abort: () => controller.abort() };
}

const frame = ({ id, event, data }: SseEvent) => `${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
};

/** Waits `ms`, or less if `signal` aborts first. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
