import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ACCESS_END_REASONS, type AccessEndReason } from '../schemas/observability-streams.js';
import type { Principal } from './principal.js';

/** How often the open streams' credentials and agents are checked again: the bound when no announcement arrives (an expiry, a lost message). */
export const RECHECK_MS = 2_000;

/** What ended: one credential (a session, a personal API key), a user's access to one account (memberKey), an account, or an agent. */
export interface AccessLoss {
  scope: 'credential' | 'member' | 'account' | 'agent';
  id: string;
  reason: AccessEndReason;
}

/** What a service that ends access tells once its change is committed. */
export interface AccessEnds {
  announce(loss: AccessLoss): void;
}

/** How a stream's access is checked again: through the code that authenticates requests and finds agents. */
export interface AccessCheck {
  /** Why `principal`'s credential no longer grants what it granted when the stream opened; undefined while it does. */
  accessLost(principal: Principal): Promise<AccessEndReason | undefined>;
  agentExists(principal: Principal, agentId: string): Promise<boolean>;
}

/** An open stream's hold on its access: `signal` aborts, with `{ reason }`, when that access ends; `release` when the stream ends first. */
export interface StreamLease {
  readonly signal: AbortSignal;
  release(): void;
}

interface OpenStream {
  principal: Principal;
  credential: string;
  agentId: string;
  controller: AbortController;
}

/** The keys announcements name credentials by: a session by its token's hash, a personal API key by its id. */
export const credentialKey = {
  session: (tokenHash: string) => `session:${tokenHash}`,
  apiKey: (id: string) => `api_key:${id}`,
};

/** The key a `member` announcement names a user's access to one account by. */
export const memberKey = (accountId: string, userId: string) => `${accountId}/${userId}`;

const credentialOf = ({ via, sessionHash, apiKeyId }: Principal): string =>
  via === 'session' ? credentialKey.session(sessionHash ?? '') : credentialKey.apiKey(apiKeyId ?? '');

/**
 * The open event streams (an agent's logs and metrics, a deployment's rollout), each by
 * its credential, user, account and agent, so that a stream ends within seconds of the
 * access it was opened with (docs/operations.md, "Open streams").
 *
 * A service that ends access announces it after its commit: the matching streams here end
 * at once, and the announcement goes on a Redis channel to every other copy of the control
 * API, which ends theirs. The channel is listened to only while this copy has a stream open.
 * Every RECHECK_MS each open stream's credential is authenticated again and its agent
 * looked up again, which ends streams nothing was announced for (an expired session, a
 * user removed by `npm run admin`, an account that now requires SSO, a message lost while
 * Redis was away). A re-check that fails (Postgres away) ends nothing: the next one decides.
 */
export class OpenStreams implements AccessEnds {
  private readonly streams = new Set<OpenStream>();
  private readonly channel: string;
  private subscriber: Redis | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly redis: Redis,
    private readonly access: AccessCheck,
    private readonly logger: Logger,
    private readonly recheckMs = RECHECK_MS,
  ) {
    // ioredis prefixes keys, not channels: the prefix keeps installations sharing a Redis apart.
    this.channel = `${redis.options.keyPrefix ?? ''}control:stream-access`;
  }

  /** Registers a stream `principal` opened on `agentId`. */
  open(principal: Principal, agentId: string): StreamLease {
    const stream: OpenStream = { principal, credential: credentialOf(principal), agentId, controller: new AbortController() };
    this.streams.add(stream);
    this.listen();
    return { signal: stream.controller.signal, release: () => this.forget(stream) };
  }

  /** Ends the matching streams of this copy now, and tells the other copies. */
  announce(loss: AccessLoss): void {
    this.end(loss);
    this.redis.publish(this.channel, JSON.stringify(loss)).catch((error: unknown) => {
      this.logger.warn({ err: error, scope: loss.scope }, 'stream access announcement not published: other copies end those streams at their re-check');
    });
  }

  /** Streams open in this copy. */
  get size(): number {
    return this.streams.size;
  }

  private end(loss: AccessLoss): void {
    for (const stream of this.streams) {
      if (matches(stream, loss)) this.close(stream, loss.reason);
    }
  }

  private close(stream: OpenStream, reason: AccessEndReason): void {
    if (!this.streams.has(stream)) return;
    this.forget(stream);
    stream.controller.abort({ reason });
  }

  private forget(stream: OpenStream): void {
    this.streams.delete(stream);
    if (this.streams.size === 0) this.quiet();
  }

  /** Listens to the channel and re-checks on a timer, from the first open stream on. */
  private listen(): void {
    this.timer ??= setInterval(() => void this.recheck(), this.recheckMs).unref();
    if (this.subscriber) return;
    // A connection of its own (a subscribed one runs nothing else) that queues SUBSCRIBE until connected; subscribed again on every reconnect.
    const subscriber = this.redis.duplicate({ enableOfflineQueue: true });
    subscriber.on('error', () => undefined);
    subscriber.on('ready', () => void subscriber.subscribe(this.channel).catch(() => undefined));
    subscriber.on('message', (channel: string, message: string) => {
      const loss = channel === this.channel ? parseLoss(message) : undefined;
      if (loss) this.end(loss);
    });
    this.subscriber = subscriber;
  }

  private quiet(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  /** One look at every open stream, each credential and agent asked once; skipped while the last one runs. */
  private async recheck(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    // One look per credential in each account (X-Account-Id), and per agent of an account.
    const losses = new Map<string, Promise<AccessEndReason | undefined>>();
    const agents = new Map<string, Promise<boolean>>();
    try {
      await Promise.all([...this.streams].map(async (stream) => {
        const { principal, credential, agentId } = stream;
        const lossKey = `${principal.accountId}/${credential}`;
        if (!losses.has(lossKey)) losses.set(lossKey, this.access.accessLost(principal));
        const agentKey = `${principal.accountId}/${agentId}`;
        if (!agents.has(agentKey)) agents.set(agentKey, this.access.agentExists(principal, agentId));
        const [lost, exists] = await Promise.all([losses.get(lossKey), agents.get(agentKey)]);
        if (lost) this.close(stream, lost);
        else if (!exists) this.close(stream, 'agent_deleted');
      }));
    } catch (error) {
      this.logger.warn({ err: error }, 'open streams not re-checked; the next pass tries again');
    } finally {
      this.checking = false;
    }
  }
}

function matches({ principal, credential, agentId }: OpenStream, { scope, id }: AccessLoss): boolean {
  switch (scope) {
    case 'credential': return credential === id;
    case 'member': return memberKey(principal.accountId, principal.userId) === id;
    case 'account': return principal.accountId === id;
    case 'agent': return agentId === id;
  }
}

const SCOPES: readonly unknown[] = ['credential', 'member', 'account', 'agent'] satisfies AccessLoss['scope'][];

/** An announcement from the channel; anything else on it is ignored. */
function parseLoss(message: string): AccessLoss | undefined {
  try {
    const { scope, id, reason } = JSON.parse(message) as Partial<AccessLoss>;
    const valid = SCOPES.includes(scope) && typeof id === 'string' && (ACCESS_END_REASONS as readonly unknown[]).includes(reason);
    return valid ? ({ scope, id, reason } as AccessLoss) : undefined;
  } catch {
    return undefined;
  }
}
