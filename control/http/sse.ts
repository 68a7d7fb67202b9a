import { PassThrough } from 'node:stream';

export interface SseEvent {
  event: string;
  data: unknown;
  id?: string;
}

/**
 * A server-sent event stream fed by `source`: a comment line every `heartbeatMs` keeps
 * proxies from closing an idle stream; the source is stopped when the client leaves.
 */
export function sseStream(source: (signal: AbortSignal) => AsyncIterable<SseEvent>, heartbeatMs = 15_000): { stream: PassThrough; abort: () => void } {
  const stream = new PassThrough();
  const controller = new AbortController();
  const heartbeat = setInterval(() => stream.write(': heartbeat\n\n'), heartbeatMs);
  const abort = () => controller.abort();
  const finish = () => {
    clearInterval(heartbeat);
    controller.abort();
  };
  stream.on('close', finish);
  stream.write(': connected\n\n');

  void (async () => {
    try {
      for await (const item of source(controller.signal)) {
        if (controller.signal.aborted) break;
        const idLine = item.id ? `id: ${item.id}\n` : '';
        stream.write(`${idLine}event: ${item.event}\ndata: ${JSON.stringify(item.data)}\n\n`);
      }
    } catch (error) {
      if (!controller.signal.aborted) stream.write(`event: error\ndata: ${JSON.stringify({ message: (error as Error).message })}\n\n`);
    } finally {
      clearInterval(heartbeat);
      stream.end();
    }
  })();
  return { stream, abort };
}

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
