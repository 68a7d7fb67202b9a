/**
 * The edge projection's Redis layout: what the control API writes and authz reads
 * (docs/contract.md, "Edge projection"). Both sides import these names; neither spells a
 * key itself. Every per-agent key carries the slug as a hash tag, so one Check's keys
 * live in one Redis Cluster slot and one Lua script can touch them all: the edge knows
 * only the hostname, and the slug, one to one with the agent id, is what it derives from it.
 */
export const edgeKeyNames = {
  /** Hash of the agent's edge fields (EDGE_AGENT_FIELDS). */
  agent: (slug: string) => `edge:agent:{${slug}}`,
  /** Set of the SHA-256 hex digests of the agent's live access keys. */
  keys: (slug: string) => `edge:keys:{${slug}}`,
  /** Set of `host:port` of the replicas that take traffic (the stable version's while a canary runs). */
  upstreams: (slug: string) => `edge:upstreams:{${slug}}`,
  /**
   * Set of `host:port` of a running canary's replicas (issue 36): the share of the agent's
   * allowed requests in the agent hash's `canary_percent` goes here, and its preview
   * hostname only here.
   */
  canaryUpstreams: (slug: string) => `edge:canary-upstreams:{${slug}}`,
  callerCounter: (slug: string, caller: string, window: number) => `edge:rl:{${slug}}:caller:${caller}:${window}`,
  agentCounter: (slug: string, window: number) => `edge:rl:{${slug}}:agent:${window}`,
  /** Allowed requests in a UTC month; authz INCRs it, the control API flushes it to Postgres. */
  usage: (slug: string, month: string) => `edge:usage:{${slug}}:${month}`,
  /** A usage counter renamed for its flush, so requests counted meanwhile start a fresh one. */
  usageFlushing: (slug: string, month: string, flushId: string) => `edge:usage-flushing:{${slug}}:${month}:${flushId}`,
  /** Not hash-tagged: an index of projected slugs, read only when rebuilding. */
  index: 'edge:slugs',
  /**
   * Hash of one second of an agent's forwarded requests (REQUEST_FIGURE_FIELDS), added to
   * by every edge process (HINCRBY), read by the control API for the last 60 s. Tagged
   * with the agent id, not the slug: a slug freed by a deleted agent may be taken again,
   * and its figures must not follow it.
   */
  requestFigures: (agentId: string, epochSecond: number) => `edge:requests:{${agentId}}:${epochSecond}`,
  /**
   * A parked agent's wake request (docs/contract.md, "Wake"): set NX by the first Check
   * that finds the agent wakeable without a replica, with a TTL of authz's wake timeout, so
   * concurrent Checks share one wake. Its value is WAKE_REQUESTED, or WAKE_REFUSED_PREFIX and
   * the answer's body when the control API could not start the agent.
   */
  wake: (slug: string) => `edge:wake:{${slug}}`,
  /**
   * List of agent ids to wake: the Check that set `wake` LPUSHes the id, one control API
   * copy BRPOPs it (a wake recorded while no copy runs waits here). Not hash-tagged: one list.
   */
  wakeQueue: 'edge:wake-queue',
  /**
   * Custom domains (issue 34). Hash of every active custom hostname → its agent's slug. Not
   * hash-tagged: authz keeps a copy in memory (reloaded on `domainEventsChannel`) to find
   * the slug before the Check, so a Check stays one round trip.
   */
  domainHosts: 'edge:domain-hosts',
  /**
   * Set of the agent's active custom hostnames, in the agent's slot: the Check script
   * proves membership here, so a deleted domain stops routing at once even while an
   * authz's in-memory copy of `domainHosts` still names it.
   */
  domains: (slug: string) => `edge:domains:{${slug}}`,
  /** An HTTP-01 challenge's key authorization, by token, while its order is pending (with a TTL). */
  acmeChallenge: (token: string) => `edge:acme:${token}`,
  /**
   * Hash of custom hostname → JSON `{chain, key}` (PEM) of its certificate, for the edge's
   * TLS (the local edge's certificate store; reloaded on `domainEventsChannel`).
   */
  certificates: 'edge:certs',
} as const;

/**
 * Pub/sub channel told after every change to `domainHosts` or `certificates` (message:
 * the hostname that changed). Subscribers reload what they keep of them.
 */
export const domainEventsChannel = (keyPrefix: string) => `${keyPrefix}edge:domain-events`;

/** The path prefix of ACME HTTP-01 challenges (RFC 8555 §8.3), answered by the edge from `acmeChallenge`. */
export const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/';

/**
 * Pub/sub channel of wake events (WakeEvent), published by the control API, one
 * subscriber connection per authz process. Channels are not keys: Redis and ioredis's
 * keyPrefix leave them alone, so both sides put REDIS_KEY_PREFIX before it themselves.
 */
export const wakeEventsChannel = (keyPrefix: string) => `${keyPrefix}edge:wake-events`;

/** The value of a wake key while the control API starts the agent. */
export const WAKE_REQUESTED = 'requested';
/** A refused wake's key value starts with this; the rest is the plain-text body of the 503. */
export const WAKE_REFUSED_PREFIX = 'refused:';
/** How long a refusal stands: Checks meanwhile answer it at once instead of waiting; then a request may try again. */
export const WAKE_REFUSAL_TTL_SECONDS = 10;

/**
 * A message on the wake-events channel: `routable <slug>` once the agent's upstream set
 * has a replica (every projection write that leaves one publishes it), `refused <slug>`
 * once a wake failed (the body is in the wake key).
 */
export type WakeEvent = { event: 'routable' | 'refused'; slug: string };

export const formatWakeEvent = ({ event, slug }: WakeEvent): string => `${event} ${slug}`;

export function parseWakeEvent(message: string): WakeEvent | undefined {
  const [event, slug, ...rest] = message.split(' ');
  if ((event !== 'routable' && event !== 'refused') || !slug || rest.length > 0) return undefined;
  return { event, slug };
}

/** SCAN patterns for the keys the control API sweeps. */
export const edgeKeyPatterns = {
  usage: 'edge:usage:*',
  usageFlushing: 'edge:usage-flushing:*',
} as const;

const USAGE_KEY = /^edge:usage:\{([^}]+)\}:(\d{4}-\d{2})$/;
const USAGE_FLUSHING_KEY = /^edge:usage-flushing:\{([^}]+)\}:(\d{4}-\d{2}):([0-9a-f-]{36})$/;

const REQUEST_FIGURES_KEY = /^edge:requests:\{([^}]+)\}:(\d+)$/;

/** The agent id and second of a request-figures hash's name, or undefined for any other key. */
export function parseRequestFiguresKey(key: string): { agentId: string; epochSecond: number } | undefined {
  const match = REQUEST_FIGURES_KEY.exec(key);
  return match ? { agentId: match[1]!, epochSecond: Number(match[2]) } : undefined;
}

/** The slug and month of a usage counter's name, or undefined for any other key. */
export function parseUsageKey(key: string): { slug: string; month: string } | undefined {
  const match = USAGE_KEY.exec(key);
  return match ? { slug: match[1]!, month: match[2]! } : undefined;
}

/** The slug, month and flush id of a flushing counter's name, or undefined for any other key. */
export function parseUsageFlushingKey(key: string): { slug: string; month: string; flushId: string } | undefined {
  const match = USAGE_FLUSHING_KEY.exec(key);
  return match ? { slug: match[1]!, month: match[2]!, flushId: match[3]! } : undefined;
}

/** What the edge must know of one agent to answer a request without asking Postgres. */
export interface EdgeAgent {
  id: string;
  accountId: string;
  slug: string;
  access: 'public' | 'private';
  /** The agent's rate_limit_rpm, or DEFAULT_CALLER_RPM. */
  callerRpm: number;
  /** The plan's per-agent limit (max_agent_rpm). */
  agentRpm: number;
  /**
   * The platform starts the agent when a request finds no replica: it scales to zero
   * (auto_scale with min_replicas 0) and its owner has not stopped it.
   */
  wakeable: boolean;
  /** The canary deployment running now, or null (the default): every request to `upstreams`. */
  canary?: EdgeCanary | null;
}

/** A canary deployment as the edge splits traffic for it (issue 36). */
export interface EdgeCanary {
  /** The deployment's number: its preview hostname is `<slug>--d<number>.<agent domain>`. */
  deployment: number;
  /** 1 to 99: the share of the agent's allowed requests sent to the canary's replicas. */
  percent: number;
  /** 'caller': a caller (its access key, else its address) stays on one version for the canary's life. */
  affinity: 'none' | 'caller';
}

/** The hostname label of a canary deployment's preview URL. Slugs never hold `--` (control/domain/slug.ts). */
export const previewLabel = (slug: string, deployment: number): string => `${slug}--d${deployment}`;

/** The per-caller limit of an agent without a rate_limit_rpm of its own. */
export const DEFAULT_CALLER_RPM = 120;

/** Field names of the agent hash; authz's Check script reads id, access and both limits. */
export const EDGE_AGENT_FIELDS = {
  id: 'id',
  accountId: 'account',
  access: 'access',
  callerRpm: 'caller_rpm',
  agentRpm: 'agent_rpm',
  /** '1' or '0'. */
  wakeable: 'wakeable',
  /** EdgeCanary's fields, present only while a canary runs. */
  canaryDeployment: 'canary_deployment',
  canaryPercent: 'canary_percent',
  canaryAffinity: 'canary_affinity',
} as const;

/** The fields a canary adds to the agent hash, removed with it. */
export const EDGE_CANARY_FIELDS = [EDGE_AGENT_FIELDS.canaryDeployment, EDGE_AGENT_FIELDS.canaryPercent, EDGE_AGENT_FIELDS.canaryAffinity] as const;

/** The agent hash as written to Redis (every value a string). */
export const edgeAgentHash = (agent: EdgeAgent): Record<string, string> => ({
  [EDGE_AGENT_FIELDS.id]: agent.id,
  [EDGE_AGENT_FIELDS.accountId]: agent.accountId,
  [EDGE_AGENT_FIELDS.access]: agent.access,
  [EDGE_AGENT_FIELDS.callerRpm]: String(agent.callerRpm),
  [EDGE_AGENT_FIELDS.agentRpm]: String(agent.agentRpm),
  [EDGE_AGENT_FIELDS.wakeable]: agent.wakeable ? '1' : '0',
  ...(agent.canary
    ? {
        [EDGE_AGENT_FIELDS.canaryDeployment]: String(agent.canary.deployment),
        [EDGE_AGENT_FIELDS.canaryPercent]: String(agent.canary.percent),
        [EDGE_AGENT_FIELDS.canaryAffinity]: agent.canary.affinity,
      }
    : {}),
});

/** Fixed rate-limit windows are one minute long. */
export const WINDOW_SECONDS = 60;
/** Counters outlive their window by one more, then expire. */
export const COUNTER_TTL_SECONDS = 2 * WINDOW_SECONDS;

/** The window a moment falls in: whole minutes since the epoch. */
export const windowOf = (now: Date): number => Math.floor(now.getTime() / 1000 / WINDOW_SECONDS);

/** Whole seconds until the window of `now` ends, at least 1 (for Retry-After). */
export function secondsToWindowEnd(now: Date): number {
  const windowEndMs = (windowOf(now) + 1) * WINDOW_SECONDS * 1000;
  return Math.max(1, Math.ceil((windowEndMs - now.getTime()) / 1000));
}

/** The usage bucket of a moment: its UTC month, `YYYY-MM`. */
export const usageMonthOf = (now: Date): string => now.toISOString().slice(0, 7);
