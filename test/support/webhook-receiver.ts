import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
}

/**
 * A webhook receiver on 127.0.0.1 (tests never send anywhere else): it records every
 * request and answers each with the next of `answers`, then with the last one for good.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** TCP connections accepted: a refused delivery must open none. */
  connections = 0;
  private server: Server | undefined;
  private answers: Answer[] = [{ status: 200 }];

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        const answer = this.answers.length > 1 ? this.answers.shift()! : this.answers[0]!;
        response.writeHead(answer.status, answer.headers).end('{}');
      });
    });
    this.server.on('connection', () => {
      this.connections += 1;
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** The answers to give from now on, in order; the last one repeats. */
  answer(...answers: Answer[]): void {
    this.answers = answers;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${path}`;
  }

  /** The requests of one event (by its webhook-id), in the order they came. */
  of(eventId: string): Received[] {
    return this.received.filter((request) => request.headers['webhook-id'] === eventId);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
