import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { SecretBox } from '../crypto/secret-box.js';
import { listen, type Listening } from '../db/notifications.js';
import { nextRetryDelayMs, type RetrySchedule } from '../domain/webhooks.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import { OUTBOX_CHANNEL, type ClaimedDelivery } from '../repositories/webhook-outbox.js';
import type { AttemptResult, WebhookSender } from './webhook-sender.js';

export interface DispatcherSettings {
  /** Deliveries claimed and attempted at once by one copy. */
  readonly batchSize: number;
  /** The safety poll: how long the dispatcher waits at most when no NOTIFY comes (a lost connection, a retry falling due). */
  readonly pollIntervalMs: number;
  readonly retry: RetrySchedule;
  /** One attempt's deadline: a claim holds its row this long and 30 s more. */
  readonly timeoutMs: number;
}

/**
 * Delivers the webhook outbox (docs/webhooks.md, "Delivery"). It runs in every copy of the
 * control API: claims (WebhookOutboxRepository.claimDue) hand each due delivery to one
 * copy. It wakes on the NOTIFY an outbox insert sends at commit, on the next retry falling
 * due, and at least every poll interval; everything it knows is in Postgres, so a restart
 * carries on where the last copy stopped (an attempt cut off by a crash is made again once
 * its claim lapses: delivery is at least once, and webhook-id lets receivers drop repeats).
 */
export class WebhookDispatcher {
  private running: Promise<void> | undefined;
  private stopping = false;
  private listening: Listening | undefined;
  private wake: (() => void) | undefined;
  private listenFailed = false;

  constructor(
    private readonly db: Knex,
    private readonly box: SecretBox,
    private readonly sender: WebhookSender,
    private readonly settings: DispatcherSettings,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.running = this.loop();
  }

  /** Waits for the attempts under way; what is left stays in the outbox for the next start (or another copy). */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    this.wake?.();
    await this.running;
    this.running = undefined;
    await this.listening?.close();
    this.listening = undefined;
  }

  /** Claims one batch of due deliveries and makes their attempts; returns how many it made. */
  async runOnce(): Promise<number> {
    const claimed = await repositoriesOn(this.db).webhookOutbox.claimDue(this.settings.batchSize, this.settings.timeoutMs + 30_000);
    await Promise.all(claimed.map((delivery) => this.attempt(delivery)));
    return claimed.length;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      await this.ensureListening();
      let waitMs = this.settings.pollIntervalMs;
      try {
        if ((await this.runOnce()) > 0) continue;
        const untilDue = await repositoriesOn(this.db).webhookOutbox.msUntilNextDue();
        if (untilDue !== null) waitMs = Math.min(waitMs, Math.max(untilDue, 10));
      } catch (error) {
        this.logger.warn({ err: error }, 'webhook delivery pass failed; trying again after the poll interval');
      }
      if (!this.stopping) await this.sleep(waitMs);
    }
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const now = new Date();
    let result: AttemptResult;
    try {
      const secret = this.box.open(delivery.secret_sealed);
      result = await this.sender.send({ url: delivery.url, secret, eventId: delivery.event_id, body: delivery.body }, now);
    } catch (error) {
      result = { statusCode: null, error: `not sent: ${(error as Error).message}`, durationMs: 0 };
    }
    const delay = result.error === null ? null : nextRetryDelayMs(this.settings.retry, delivery.attempt, now.getTime() - delivery.created_at.getTime());
    const gaveUp = result.error !== null && delay === null;
    try {
      await inTransaction(this.db, async (repos) => {
        await repos.webhooks.addDelivery({
          webhook_id: delivery.webhook_id,
          event_id: delivery.event_id,
          event_type: delivery.event_type,
          attempt: delivery.attempt,
          status_code: result.statusCode,
          duration_ms: result.durationMs,
          error: gaveUp ? `${result.error}; gave up after ${delivery.attempt} attempts` : result.error,
          at: now,
        });
        if (delay === null) await repos.webhookOutbox.finish(delivery.id, delivery.attempt);
        else await repos.webhookOutbox.retryIn(delivery.id, delivery.attempt, delay);
      });
    } catch (error) {
      // The claim lapses and the attempt is made again: at least once, never lost.
      this.logger.warn({ err: error, webhook_id: delivery.webhook_id, event_id: delivery.event_id }, 'could not record a webhook attempt');
      return;
    }
    if (result.error !== null) {
      this.logger.info({ webhook_id: delivery.webhook_id, event_id: delivery.event_id, attempt: delivery.attempt, error: result.error, gave_up: gaveUp }, 'webhook delivery failed');
    }
  }

  /** LISTENs unless it already does; a failure is logged once and retried on the next round, the poll covering meanwhile. */
  private async ensureListening(): Promise<void> {
    if (this.listening) return;
    try {
      this.listening = await listen(this.db, OUTBOX_CHANNEL, () => this.wake?.(), (error) => {
        this.logger.warn({ err: error }, 'webhook outbox notifications lost; polling until they are back');
        this.listening = undefined;
      });
      this.listenFailed = false;
    } catch (error) {
      if (!this.listenFailed) this.logger.warn({ err: error }, 'cannot listen for webhook outbox notifications; polling');
      this.listenFailed = true;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
