import type { Knex } from 'knex';
import { TERMINAL_PHASES, type DeploymentEventRow, type DeploymentRow, type DeploymentStatus } from '../domain/deployment.js';
import { repositoriesOn } from '../repositories/index.js';
import type { EventNotifier } from './event-notifier.js';

export type FeedItem = { kind: 'progress'; event: DeploymentEventRow } | { kind: 'end'; status: DeploymentStatus };

/** How often a follower reads again without being told: events another copy of the control API wrote arrive this way. */
export const FEED_POLL_MS = 1000;

/**
 * A deployment's events for its stream: those after `afterId` first, then each new one as
 * the tracker writes it (woken in this process, read again every FEED_POLL_MS for other
 * copies'), and last an `end` with the deployment's status: after a terminal event
 * (succeeded, failed), or once the deployment ended without one (superseded, cancelled).
 * Nothing more follows a deployment that is gone (pruned, or its agent deleted).
 */
export class DeploymentEventFeed {
  constructor(
    private readonly db: Knex,
    private readonly notifier: EventNotifier,
    private readonly pollMs = FEED_POLL_MS,
  ) {}

  async *follow(deployment: DeploymentRow, afterId: number, signal: AbortSignal): AsyncIterable<FeedItem> {
    const deployments = repositoriesOn(this.db).deployments;
    let after = afterId;
    while (!signal.aborted) {
      // Listening before reading, so an event written between the read and the wait still wakes it.
      const woken = this.notifier.next(deployment.id, this.pollMs, signal);
      // The status before the events: the tracker writes an end and its last event in one
      // transaction, so a deployment read as ended has all its events in the read after.
      const current = await deployments.find(deployment.agent_id, deployment.id);
      if (!current) return;
      for (const event of await deployments.eventsAfter(deployment.id, after)) {
        after = event.id;
        yield { kind: 'progress', event };
        if (TERMINAL_PHASES.has(event.phase)) {
          yield { kind: 'end', status: event.phase as DeploymentStatus };
          return;
        }
      }
      if (current.status !== 'in_progress') {
        yield { kind: 'end', status: current.status };
        return;
      }
      await woken;
    }
  }
}
