import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { edgeKeyNames, parseWakeEvent, usageMonthOf, wakeEventsChannel } from '../contract/edge-keys.js';
import type { Clock } from '../contract/clock.js';
import { withDeadline } from '../contract/deadline.js';
import { defineAfterWakeScript, type AfterWake } from './after-wake-script.js';
import type { Decision, Parked } from './decision.js';

/** Retry-After of a wake that took longer than WAKE_TIMEOUT_SECONDS: the replica is likely up by then. */
export const WAKE_TIMEOUT_RETRY_AFTER_SECONDS = 5;

export interface WakeWaiterDeps {
  /** The client Checks use. */
  redis: Redis;
  /** A connection of its own, put in subscriber mode here: one per authz process, whatever the number of held Checks. */
  subscriber: Redis;
  keyPrefix: string;
  clock: Clock;
  timeoutMs: number;
  redisTimeoutMs: number;
  onRedisError: (error: Error) => void;
}

export interface WakeWaiter {
  /** Holds a Check for a parked agent until it has a replica (allowed), its wake is refused, or the timeout. */
  wait(parked: Parked): Promise<Decision>;
  /** Checks held now. */
  readonly held: number;
  /** Answers every held Check now, as at its timeout (a last read), so authz's shutdown does not wait out the wakes. */
  releaseAll(): void;
}

/**
 * Held Checks wait on the wake-events channel (docs/contract.md, "Wake"), each a callback
 * in a map by slug and a timer: no CPU and no Redis round trip while they wait. Woken, a
 * Check reads once (after-wake script) and forwards, or waits again until its deadline.
 * The callback is registered before each read, so an event published between the read and
 * the wait is never missed.
 */
export function createWakeWaiter(deps: WakeWaiterDeps): WakeWaiter {
  const channel = wakeEventsChannel(deps.keyPrefix);
  const waiters = new Map<string, Set<() => void>>();
  let held = 0;
  let releasing = false;
  deps.subscriber.on('message', (from: string, message: string) => {
    const event = from === channel ? parseWakeEvent(message) : undefined;
    const wakeUps = event && waiters.get(event.slug);
    if (!wakeUps) return;
    waiters.delete(event.slug);
    for (const wakeUp of wakeUps) wakeUp();
  });
  // Not awaited: authz serves (and fails its Checks closed) while Redis is away. Subscribed
  // again on every connection, so a Redis restart does not leave held Checks deaf.
  const subscribe = () => void deps.subscriber.subscribe(channel).catch(() => undefined);
  deps.subscriber.on('ready', subscribe);
  subscribe();
  const afterWake = defineAfterWakeScript(deps.redis);

  /** Resolves true on the slug's next event, false after `ms`. */
  function nextEvent(slug: string, ms: number): { event: Promise<boolean>; cancel: () => void } {
    let cancel = () => undefined as void;
    const event = new Promise<boolean>((resolve) => {
      const wakeUps = waiters.get(slug) ?? new Set();
      waiters.set(slug, wakeUps);
      const forget = () => {
        clearTimeout(timer);
        wakeUps.delete(wakeUp);
        if (wakeUps.size === 0 && waiters.get(slug) === wakeUps) waiters.delete(slug);
      };
      const wakeUp = () => (forget(), resolve(true));
      const timer = setTimeout(() => (forget(), resolve(false)), ms);
      wakeUps.add(wakeUp);
      cancel = () => (forget(), resolve(false));
    });
    return { event, cancel };
  }

  async function wait({ agentId, slug, requested }: Parked): Promise<Decision> {
    const deadline = performance.now() + deps.timeoutMs;
    const keys = { upstreams: edgeKeyNames.upstreams(slug), usage: edgeKeyNames.usage(slug, usageMonthOf(deps.clock.now())), wake: edgeKeyNames.wake(slug) };
    if (requested) await withDeadline(deps.redis.lpush(edgeKeyNames.wakeQueue, agentId), deps.redisTimeoutMs);
    for (;;) {
      const remaining = releasing ? 0 : deadline - performance.now();
      const next = nextEvent(slug, Math.max(0, remaining));
      let found: AfterWake;
      try {
        found = await withDeadline(afterWake(keys), deps.redisTimeoutMs);
      } catch (error) {
        next.cancel();
        throw error;
      }
      if (found.outcome !== 'waiting' || remaining <= 0) {
        next.cancel();
        // A woken agent has no canary running: a canary starts only beside a running version.
        if (found.outcome === 'allowed') return { outcome: 'allowed', agentId, upstream: found.upstream, version: 'stable' };
        if (found.outcome === 'wake_refused') return { outcome: 'wake_refused', body: found.body };
        return { outcome: 'wake_timeout', retryAfterSeconds: WAKE_TIMEOUT_RETRY_AFTER_SECONDS };
      }
      await next.event;
    }
  }

  return {
    async wait(parked) {
      held += 1;
      try {
        return await wait(parked);
      } catch (error) {
        // As a Check's: never allow without an answer from Redis.
        deps.onRedisError(error as Error);
        return { outcome: 'unavailable' };
      } finally {
        held -= 1;
      }
    },
    get held() {
      return held;
    },
    releaseAll() {
      releasing = true;
      for (const wakeUps of [...waiters.values()]) for (const wakeUp of [...wakeUps]) wakeUp();
    },
  };
}
