import { backoffMs, fullJitter } from '../../contract/backoff.js';

/**
 * Webhooks (issue 20, docs/webhooks.md): the events an account may subscribe to, and the
 * retry schedule of a delivery that failed.
 */
export const WEBHOOK_EVENT_TYPES = ['agent.deployed', 'agent.deploy_failed', 'agent.crashed', 'agent.deleted', 'quota.exceeded', 'domain.active', 'domain.failed', 'member.added', 'member.removed'] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface WebhookRow {
  id: string;
  account_id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  /** The signing secret (whsec_…), sealed with the master keys: signing needs the secret itself, so it cannot be hashed. */
  secret_sealed: string;
  created_at: Date;
}

/** One attempt to deliver one event to one webhook, as GET /account/webhooks/{id}/deliveries lists it. */
export interface WebhookDeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: WebhookEventType;
  attempt: number;
  /** The receiver's status; null when no answer came (refused address, connection error, timeout). */
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  at: Date;
}

export interface RetrySchedule {
  /** The first retry's ceiling; each later one doubles it. */
  baseMs: number;
  /** No wait is longer than this. */
  maxMs: number;
  /** Counted from the event: no attempt is made later than this after it. */
  windowMs: number;
}

/**
 * How long to wait after the `attempt`-th failure: exponential backoff with full jitter,
 * a uniform draw in [0, min(max, base·2^(attempt-1))] (AWS Architecture Blog, "Exponential
 * Backoff And Jitter"), so receivers that come back are not hit by every sender at once.
 * Null once the next attempt would fall past the window: the delivery gives up.
 */
export function nextRetryDelayMs(schedule: RetrySchedule, attempt: number, sinceEventMs: number, random: () => number = Math.random): number | null {
  const delay = backoffMs({ baseMs: schedule.baseMs, maxMs: schedule.maxMs }, attempt, fullJitter(random));
  return sinceEventMs + delay > schedule.windowMs ? null : delay;
}
