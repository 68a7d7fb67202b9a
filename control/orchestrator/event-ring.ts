import type { JobEvent } from '../domain/job.js';

/** Events a job keeps: enough to see a crash loop or a rollout, bounded however long it runs. */
export const KEPT_EVENTS = 50;

/** A job's latest events, oldest first; the oldest go once there are more than KEPT_EVENTS. */
export class EventRing {
  private readonly events: JobEvent[] = [];

  add(event: JobEvent): void {
    this.events.push(event);
    if (this.events.length > KEPT_EVENTS) this.events.splice(0, this.events.length - KEPT_EVENTS);
  }

  list(): JobEvent[] {
    return [...this.events];
  }
}
