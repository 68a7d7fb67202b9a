import { createHash, randomInt } from 'node:crypto';
import type { Clock } from '../contract/clock.js';
import { challengeTokenOf } from './acme-challenge.js';
import { routeHost, type CustomHostLookup } from './host-routes.js';
import type { RequestFacts } from './check-request.js';
import type { CheckScriptReply, RunCheckScript } from './check-script.js';
import { withDeadline } from '../contract/deadline.js';
import type { CheckResult } from './decision.js';
import { COUNTER_TTL_SECONDS, edgeKeyNames, secondsToWindowEnd, usageMonthOf, windowOf } from '../contract/edge-keys.js';

export interface CheckerSettings {
  agentDomain: string;
  trustExternalAddress: boolean;
  redisTimeoutMs: number;
  /** WAKE_TIMEOUT_SECONDS: also the wake key's TTL, so a lost wake is asked again after it. */
  wakeTimeoutSeconds: number;
}

export interface CheckerDeps {
  runCheckScript: RunCheckScript;
  /** The custom hostnames this process knows (authz/domain-hosts.ts). */
  customHosts: CustomHostLookup;
  /** GET of `edgeKeyNames.acmeChallenge(token)`: the key authorization, or null. */
  readChallenge: (token: string) => Promise<string | null>;
  clock: Clock;
  /** Told about every Redis failure (metrics, logs); the Check itself still answers. */
  onRedisError: (error: Error) => void;
}

/** Takes the facts the Check's deserializer picked out (authz/check-request-decoder.ts). */
export type Checker = (facts: RequestFacts) => Promise<CheckResult>;

/**
 * Decides one Check: the hostname here, everything else in one Redis round trip. An ACME
 * challenge comes first, for any Host (the CA asks the custom hostname, which may not route
 * yet): one GET, and no agent, limit or usage is touched.
 */
export function createChecker(settings: CheckerSettings, deps: CheckerDeps): Checker {
  async function answerChallenge(path: string): Promise<CheckResult> {
    const token = challengeTokenOf(path);
    if (token === null) return { outcome: 'unknown_challenge' };
    try {
      const keyAuthorization = await withDeadline(deps.readChallenge(token), settings.redisTimeoutMs);
      return keyAuthorization === null ? { outcome: 'unknown_challenge' } : { outcome: 'acme_challenge', keyAuthorization };
    } catch (error) {
      deps.onRedisError(error as Error);
      return { outcome: 'unavailable' };
    }
  }

  return async (facts) => {
    if (facts.challengePath !== undefined) return answerChallenge(facts.challengePath);
    const route = routeHost(facts.host, settings.agentDomain, deps.customHosts);
    if (route === null) return { outcome: 'unknown_agent' };
    const { slug } = route;

    const now = deps.clock.now();
    const window = windowOf(now);
    const keyHash = facts.accessKey ? sha256Hex(facts.accessKey) : '';
    try {
      const reply = await withDeadline(
        deps.runCheckScript(
          {
            agent: edgeKeyNames.agent(slug),
            keys: edgeKeyNames.keys(slug),
            upstreams: edgeKeyNames.upstreams(slug),
            callerCounter: edgeKeyNames.callerCounter(slug, facts.caller, window),
            agentCounter: edgeKeyNames.agentCounter(slug, window),
            usage: edgeKeyNames.usage(slug, usageMonthOf(now)),
            wake: edgeKeyNames.wake(slug),
            domains: edgeKeyNames.domains(slug),
            canaryUpstreams: edgeKeyNames.canaryUpstreams(slug),
          },
          {
            keyHash,
            counterTtlSeconds: COUNTER_TTL_SECONDS,
            wakeTtlSeconds: settings.wakeTimeoutSeconds,
            customHost: route.customHost ?? '',
            previewDeployment: route.previewDeployment === null ? '' : String(route.previewDeployment),
            randomBucket: randomInt(100),
            callerSeed: callerSeedOf(keyHash || facts.caller),
            addressSeed: callerSeedOf(facts.caller),
          },
        ),
        settings.redisTimeoutMs,
      );
      return resultOf(reply, slug, secondsToWindowEnd(now));
    } catch (error) {
      // The one place a failed Check becomes a decision: never allow without an answer from Redis.
      deps.onRedisError(error as Error);
      return { outcome: 'unavailable' };
    }
  };
}

function resultOf([outcome, agentId, detail, version]: CheckScriptReply, slug: string, retryAfterSeconds: number): CheckResult {
  switch (outcome) {
    case 'allowed':
      return { outcome, agentId: agentId ?? '', upstream: detail ?? '', version: version === 'canary' ? 'canary' : 'stable' };
    case 'parked':
      return { outcome, agentId: agentId ?? '', slug, requested: detail === 'requested' };
    case 'wake_refused':
      return { outcome, body: detail ?? '' };
    case 'caller_rate_limited':
    case 'agent_rate_limited':
      return { outcome, retryAfterSeconds };
    case 'unknown_agent':
    case 'invalid_key':
    case 'no_replica':
      return { outcome };
    default:
      throw new Error(`check script returned an unknown outcome "${outcome}"`);
  }
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * FNV-1a of the caller's identity, in 31 bits so Lua's numbers (doubles) add to it exactly:
 * the same caller always lands in the same bucket, and callers spread evenly over buckets.
 */
export function callerSeedOf(identity: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < identity.length; i++) hash = Math.imul(hash ^ identity.charCodeAt(i), 0x01000193);
  return (hash >>> 0) & 0x7fffffff;
}
