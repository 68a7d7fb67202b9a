import type { TokenSource } from '../bearer-token-file.js';
import type { Clock } from '../clock.js';
import type { Fetch } from '../language-model.js';
import { TRACE_ID_FIELD } from '../log-context.js';
import type { Logger } from '../logger.js';
import { encodeExportRequest, rejectedSpans, type SpanOrigin } from './otlp-json.js';
import type { FinishedSpan, SpanSink } from './spans.js';

export interface SpanExporterOptions {
  /** `${AGENT_SERVICES_URL}/v1/traces`. */
  url: string;
  token: TokenSource;
  fetch: Fetch;
  logger: Logger;
  clock: Clock;
  origin: SpanOrigin;
  /** Spans held while waiting for export; past it new spans are dropped. */
  maxQueuedSpans: number;
  /** Deadline of one export request, its answer included. */
  timeoutMs: number;
  /** Spans per request; reaching it also starts an export at once. */
  batchSize?: number;
  intervalMs?: number;
  /** Least time between two warnings about dropped spans. */
  warnEveryMs?: number;
  /** Largest request body; a larger batch is sent in halves. */
  maxBodyBytes?: number;
}

export interface ExportStats {
  exported: number;
  dropped: number;
  queued: number;
}

// Agent services, like the OpenTelemetry Collector, take at most 4 MiB per request.
export const EXPORT_DEFAULTS = { batchSize: 256, intervalMs: 1000, warnEveryMs: 60_000, maxBodyBytes: 4 * 1024 * 1024 } as const;

/**
 * Sends finished spans to agent services as OTLP/HTTP JSON, in batches, one request at a
 * time. Nothing here is ever awaited by an invoke: `enqueue` only pushes to a bounded
 * queue, and whatever cannot be held or delivered (queue full, endpoint slow, unreachable,
 * answering non-2xx, or rejecting spans in a partial success) is dropped and counted, with
 * a warning at most once a minute. Spans are telemetry: losing some beats slowing the agent.
 */
export class SpanExporter implements SpanSink {
  private queue: FinishedSpan[] = [];
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reloadToken = false;
  private exported = 0;
  private dropped = 0;
  private droppedSinceWarning = 0;
  private lastWarningAt: number | undefined;
  private readonly batchSize: number;
  private readonly intervalMs: number;
  private readonly warnEveryMs: number;
  private readonly maxBodyBytes: number;

  constructor(private readonly options: SpanExporterOptions) {
    this.batchSize = options.batchSize ?? EXPORT_DEFAULTS.batchSize;
    this.intervalMs = options.intervalMs ?? EXPORT_DEFAULTS.intervalMs;
    this.warnEveryMs = options.warnEveryMs ?? EXPORT_DEFAULTS.warnEveryMs;
    this.maxBodyBytes = options.maxBodyBytes ?? EXPORT_DEFAULTS.maxBodyBytes;
  }

  /** Starts the periodic export; the timer does not keep the process alive. */
  start(): this {
    this.timer ??= setInterval(() => void this.flush(), this.intervalMs).unref();
    return this;
  }

  enqueue(span: FinishedSpan): void {
    if (this.queue.length >= this.options.maxQueuedSpans) {
      this.drop(1, 'buffer full');
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.batchSize && this.inFlight === undefined) void this.flush();
  }

  stats(): ExportStats {
    return { exported: this.exported, dropped: this.dropped, queued: this.queue.length };
  }

  /** Sends what is queued, one batch after another; resolves when the queue is empty or a batch failed. Never rejects. */
  flush(): Promise<void> {
    this.inFlight ??= this.drain().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Stops the timer and gives the queue one last export, for at most `deadlineMs`; what is left is dropped. */
  async shutdown(deadlineMs: number): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise((resolve) => (timeout = setTimeout(resolve, deadlineMs)))]);
    clearTimeout(timeout);
    if (this.queue.length > 0) this.drop(this.queue.splice(0).length, 'shutdown');
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.batchSize);
      const delivered = await this.sendWithinLimit(batch);
      if (!delivered) return;
    }
  }

  /** Spans with long message text (TRACE_CONTENT) can make a batch too large: it goes in halves, and a span too large alone is dropped. */
  private async sendWithinLimit(batch: FinishedSpan[]): Promise<boolean> {
    const body = JSON.stringify(encodeExportRequest(this.options.origin, batch));
    if (Buffer.byteLength(body) <= this.maxBodyBytes) return this.send(batch.length, body);
    if (batch.length === 1) {
      this.drop(1, `a span larger than ${this.maxBodyBytes} bytes`);
      return true;
    }
    const half = Math.ceil(batch.length / 2);
    if (await this.sendWithinLimit(batch.slice(0, half))) return this.sendWithinLimit(batch.slice(half));
    this.drop(batch.length - half, 'the endpoint failed an earlier part of the batch');
    return false;
  }

  /** Whether the receiver took the batch of `count` spans (rejected spans within it are counted as dropped). */
  private async send(count: number, body: string): Promise<boolean> {
    let status: number;
    let answer: unknown;
    try {
      const token = await (this.reloadToken ? this.options.token.reload() : this.options.token.current());
      this.reloadToken = false;
      const response = await this.options.fetch(this.options.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      status = response.status;
      answer = await response.json().catch(() => undefined);
    } catch (error) {
      this.drop(count, error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${this.options.timeoutMs} ms` : 'unreachable');
      return false;
    }
    if (status < 200 || status > 299) {
      // The platform may have rotated the token since the file was read.
      if (status === 401) this.reloadToken = true;
      this.drop(count, `HTTP ${status}`);
      return false;
    }
    const rejected = Math.min(rejectedSpans(answer), count);
    this.exported += count - rejected;
    if (rejected > 0) this.drop(rejected, 'rejected by the receiver');
    return true;
  }

  private drop(count: number, reason: string): void {
    this.dropped += count;
    this.droppedSinceWarning += count;
    const now = this.options.clock.now();
    if (this.lastWarningAt !== undefined && now - this.lastWarningAt < this.warnEveryMs) return;
    // The spans are of many invokes, whichever one's span or flush this happens in: the line names none.
    this.options.logger.warn('trace spans dropped', { dropped: this.droppedSinceWarning, dropped_total: this.dropped, reason, [TRACE_ID_FIELD]: undefined });
    this.lastWarningAt = now;
    this.droppedSinceWarning = 0;
  }
}
