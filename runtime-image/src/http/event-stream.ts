import type { ServerResponse } from 'node:http';

/**
 * A server-sent event stream that sends its headers with the first event, so
 * a failure before any event can still be answered as a plain JSON error.
 */
export class EventStream {
  private started = false;

  constructor(private readonly response: ServerResponse) {}

  get hasStarted(): boolean {
    return this.started;
  }

  send(event: string, data: unknown): void {
    if (!this.started) {
      this.response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        // Proxies such as nginx would otherwise hold the deltas back.
        'x-accel-buffering': 'no',
      });
      this.started = true;
    }
    this.response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.response.end();
  }
}
