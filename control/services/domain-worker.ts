import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { backoffMs, type Backoff } from '../../contract/backoff.js';
import type { Http01Publisher, IssuedCertificate } from '../acme/acme-client.js';
import { isAcmeError } from '../acme/acme-error.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { DomainRow } from '../domain/custom-domain.js';
import type { AcmeClientSource } from '../domains/acme-account.js';
import type { TxtVerifier } from '../domains/txt-verifier.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { EdgeSync } from './edge-sync.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';
import type { WebhookEvents } from './webhook-events.js';

export interface DomainWorkerParts {
  db: Knex;
  clock: Clock;
  box: SecretBox;
  edge: EdgeSync;
  txt: TxtVerifier;
  acme: AcmeClientSource;
  events: WebhookEvents;
  logger: Logger;
  intervalMs: number;
}

/** A missing TXT record is looked for again after 15 s, then up to every 10 minutes. */
const TXT_RETRY: Backoff = { baseMs: 15_000, maxMs: 600_000 };
/** A failed renewal (the certificate still serves) is tried again after 10 minutes, then up to every 12 hours. */
const RENEWAL_RETRY: Backoff = { baseMs: 600_000, maxMs: 12 * 3_600_000 };
/** While one domain's check runs, it is not due again before this (a crash mid-check retries after it). */
const CHECK_LEASE_MS = 5 * 60_000;
/** A pending challenge outlives any order the client waits for (AcmeClient's poll limit is 60 s). */
const CHALLENGE_TTL_SECONDS = 600;
/** Domains taken per pass: a pass orders certificates one after another. */
const BATCH = 10;

/**
 * Moves custom domains along (docs/domains.md): pending_verification → verifying (the TXT
 * record is read through DNS_RESOLVER) → issuing (an ACME order, HTTP-01 answered by the
 * edge from Redis) → active (the certificate sealed in Postgres, then projected: the edge
 * serves it and routes the hostname), or failed with the CA's or the resolver's reason.
 * Active certificates are renewed when a third of their lifetime is left, or earlier when
 * the CA's renewal information (RFC 9773) says so.
 *
 * Runs in one copy of the control API at a time (its loop lock), every DOMAIN_CHECK_INTERVAL
 * and at once when the API asks (`kick`: a new domain, POST …/verify).
 */
export class DomainWorker extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(private readonly parts: DomainWorkerParts, options: LoopOptions = {}) {
    super();
    this.loop = new PeriodicPass({
      ...options, loop: 'domains', intervalMs: parts.intervalMs, logger: parts.logger, pass: () => this.pass(), failureMessage: 'domain pass failed',
    });
  }

  /** Set by a kick during a pass: one more pass follows it, as the running one may have read before the change committed. */
  private kickedDuringPass = false;
  private passing = false;
  private stopped = false;

  /** A pass soon, without waiting for it: what the API calls after a commit. */
  kick(): void {
    if (this.stopped) return;
    if (this.passing) this.kickedDuringPass = true;
    else void this.loop.runOnce();
  }

  override async stop(): Promise<void> {
    this.stopped = true;
    await super.stop();
  }

  private async pass(): Promise<void> {
    this.passing = true;
    try {
      await this.advanceDue();
    } finally {
      this.passing = false;
    }
    if (this.kickedDuringPass) {
      this.kickedDuringPass = false;
      // After this pass has ended, so PeriodicPass starts a new one rather than joining it.
      setImmediate(() => this.kick());
    }
  }

  private async advanceDue(): Promise<void> {
    const due = await repositoriesOn(this.parts.db).domains.due(this.parts.clock.now(), BATCH);
    for (const domain of due) {
      try {
        await this.advance(domain);
      } catch (error) {
        // Never the certificate's key: errors here come from DNS, the CA, Postgres or Redis.
        this.parts.logger.error({ err: error, domain_id: domain.id, hostname: domain.hostname }, 'custom domain step failed');
      }
    }
  }

  private async advance(domain: DomainRow): Promise<void> {
    if (domain.status === 'active') return this.renew(domain);
    if (domain.status === 'issuing') return this.order(domain);
    return this.verify(domain);
  }

  private async verify(domain: DomainRow): Promise<void> {
    const { db, clock, txt } = this.parts;
    const domains = repositoriesOn(db).domains;
    await domains.markVerifying(domain.id, new Date(clock.now().getTime() + CHECK_LEASE_MS), clock.now());
    const verdict = await txt.verify(domain.hostname, domain.verification_value);
    if (!verdict.ok) {
      const retryAt = new Date(clock.now().getTime() + backoffMs(TXT_RETRY, domain.attempts + 1));
      await domains.keepPending(domain.id, verdict.reason, retryAt, clock.now());
      return;
    }
    await domains.markIssuing(domain.id, new Date(clock.now().getTime() + CHECK_LEASE_MS), clock.now());
    await this.order({ ...domain, status: 'issuing' });
  }

  /** The first certificate: active and routed once it is stored, failed (until the user asks again) if the CA refuses. */
  private async order(domain: DomainRow): Promise<void> {
    let issued: IssuedCertificate;
    try {
      issued = await this.issue(domain.hostname);
    } catch (error) {
      await this.fail(domain, reasonOf(error));
      return;
    }
    if (await this.store(domain, issued, 'domain.active')) this.parts.logger.info({ domain_id: domain.id, hostname: domain.hostname, serial: issued.serial }, 'custom domain active');
  }

  /** A renewal: the old certificate serves until the new one is stored; a failure is retried later, the domain stays active. */
  private async renew(domain: DomainRow): Promise<void> {
    const { db, clock, logger } = this.parts;
    let issued: IssuedCertificate;
    try {
      issued = await this.issue(domain.hostname);
    } catch (error) {
      const reason = reasonOf(error);
      const retryAt = new Date(clock.now().getTime() + Math.max(backoffMs(RENEWAL_RETRY, domain.attempts + 1), retryAfterMs(error)));
      await repositoriesOn(db).domains.postponeRenewal(domain.id, `renewal failed: ${reason}`, retryAt, clock.now());
      logger.warn({ domain_id: domain.id, hostname: domain.hostname, reason, retry_at: retryAt.toISOString() }, 'certificate renewal failed; the current one still serves');
      return;
    }
    if (await this.store(domain, issued, null)) logger.info({ domain_id: domain.id, hostname: domain.hostname, serial: issued.serial }, 'certificate renewed');
  }

  private async issue(hostname: string): Promise<IssuedCertificate> {
    const client = await this.parts.acme();
    return client.issue(hostname, this.challenges());
  }

  /** HTTP-01 answers live in Redis, where every edge process reads them (ACME_CHALLENGE_PATH). */
  private challenges(): Http01Publisher {
    const { edge } = this.parts;
    return {
      publish: (token, keyAuthorization) => edge.write((projection) => projection.putChallenge(token, keyAuthorization, CHALLENGE_TTL_SECONDS)),
      withdraw: (token) => edge.write((projection) => projection.removeChallenge(token)),
    };
  }

  /**
   * Seals the key and records the certificate (with its event) in one transaction, then
   * hands it to the edge: the certificate first, so the hostname never routes before it
   * can be served. False when the domain was deleted meanwhile: nothing is projected, and
   * a projection that raced the delete is taken back.
   */
  private async store(domain: DomainRow, issued: IssuedCertificate, event: 'domain.active' | null): Promise<boolean> {
    const { db, clock, box, edge, events } = this.parts;
    const renewAfter = await this.renewalTime(issued);
    const agent = await inTransaction(db, async (repos) => {
      const current = await repos.domains.findForAgent(domain.agent_id, domain.id);
      const owner = current ? await repos.agents.findAny(domain.agent_id) : undefined;
      if (!current || !owner) return undefined;
      await repos.domains.markActive(domain.id, {
        certificatePem: issued.chainPem,
        privateKeySealed: box.seal(issued.privateKeyPem),
        serial: issued.serial,
        notBefore: issued.notBefore,
        notAfter: issued.notAfter,
        renewAfter,
      }, clock.now());
      const stored = await repos.domains.findForAgent(domain.agent_id, domain.id);
      if (event && stored) await events.record(repos, event, owner, { domain: stored });
      return owner;
    });
    if (!agent) return false;
    await edge.write(async (projection) => {
      await projection.putCertificate(domain.hostname, { chain: issued.chainPem, key: issued.privateKeyPem });
      await projection.putDomain(agent.slug, domain.hostname);
    });
    if (!(await repositoriesOn(db).domains.findForAgent(domain.agent_id, domain.id))) {
      await edge.write((projection) => projection.removeDomain(agent.slug, domain.hostname));
      return false;
    }
    return true;
  }

  /**
   * When a third of the lifetime is left (Let's Encrypt's advice for 90-day certificates:
   * renew at 60 days), or at the CA's suggested window (RFC 9773 §4.2: a time chosen
   * uniformly at random in it) if that comes first.
   */
  private async renewalTime(issued: IssuedCertificate): Promise<Date> {
    const lifetimeMs = issued.notAfter.getTime() - issued.notBefore.getTime();
    const byLifetime = new Date(issued.notAfter.getTime() - lifetimeMs / 3);
    let window;
    try {
      window = await (await this.parts.acme()).renewalInfo(issued.certId);
    } catch (error) {
      this.parts.logger.warn({ err: error }, 'renewal information could not be read; renewing by lifetime');
    }
    if (!window) return byLifetime;
    const suggested = new Date(window.start.getTime() + Math.random() * Math.max(0, window.end.getTime() - window.start.getTime()));
    return suggested < byLifetime ? suggested : byLifetime;
  }

  private async fail(domain: DomainRow, reason: string): Promise<void> {
    const { db, clock, events, logger } = this.parts;
    await inTransaction(db, async (repos) => {
      const current = await repos.domains.findForAgent(domain.agent_id, domain.id);
      const owner = current ? await repos.agents.findAny(domain.agent_id) : undefined;
      if (!current || !owner) return;
      await repos.domains.markFailed(domain.id, reason, null, clock.now());
      const failed = await repos.domains.findForAgent(domain.agent_id, domain.id);
      if (failed) await events.record(repos, 'domain.failed', owner, { domain: failed, reason });
    });
    logger.warn({ domain_id: domain.id, hostname: domain.hostname, reason }, 'custom domain failed');
  }
}

/** What a user is shown: the CA's problem (type and detail) or the error's message; never a key. */
function reasonOf(error: unknown): string {
  if (isAcmeError(error)) return `the certificate authority refused: ${error.detail} (${error.type})`;
  return error instanceof Error ? error.message : String(error);
}

/** A CA's Retry-After (rateLimited, RFC 8555 §6.6), respected as a floor of the next try. */
function retryAfterMs(error: unknown): number {
  return isAcmeError(error) && error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : 0;
}
