import type { AgentRow } from './agent.js';
import { scalesToZero } from './deploy.js';

/**
 * When an auto-scaled agent with min_replicas 0 is idle enough to park (docs/autoscaling.md,
 * "Scale to zero"). Idle means "no request forwarded by the edge": the edge's per-second
 * request figures, which only forwarded requests the agent answered leave, so callers the
 * edge refused (bad key, rate limit) never keep an agent awake. Pure: the parker looks,
 * this decides.
 */
export interface ActivityMemory {
  /** When the agent was last known busy (ms since the epoch). */
  lastActiveAt: number;
  /** When the parker last looked (ms). */
  lastLookAt: number;
}

export interface Look {
  at: number;
  /** Whether the edge forwarded any request to the agent since the previous look. */
  sawRequests: boolean;
  /** How far back a look can see (the figures' lifetime, less the edge's reporting delay), ms. */
  reachMs: number;
}

/**
 * The agent's last activity after a look. What the parker cannot know counts as activity
 * now: an agent seen for the first time (a restart of the control API, or another copy
 * took over) and a gap between looks longer than the figures reach, so parking is only
 * ever late, never early.
 */
export function afterLook(memory: ActivityMemory | undefined, look: Look): ActivityMemory {
  const known = memory !== undefined && look.at - memory.lastLookAt <= look.reachMs;
  const lastActiveAt = look.sawRequests || !known ? look.at : memory.lastActiveAt;
  return { lastActiveAt, lastLookAt: look.at };
}

/** Parks once the agent has been idle for its deploy's scale_to_zero_after_seconds. */
export const parkingDue = (memory: ActivityMemory, now: number, afterSeconds: number): boolean =>
  now - memory.lastActiveAt >= afterSeconds * 1000;

/**
 * Whether a request that finds no replica should start the agent: it scales to zero and
 * its owner has not stopped it (0 replicas asked for without the platform parking it).
 */
export const wakeable = (agent: Pick<AgentRow, 'deploy' | 'deployed_version' | 'desired_replicas' | 'parked_at'>): boolean =>
  scalesToZero(agent.deploy) && agent.deployed_version !== null && (agent.desired_replicas > 0 || agent.parked_at !== null);
