import type { Knex } from 'knex';
import { DOMAIN_WORK_STATUSES, type DomainRow } from '../domain/custom-domain.js';

/** What a new certificate leaves on its domain. */
export interface IssuedCertificate {
  /** The chain, leaf first, as the CA sent it. */
  certificatePem: string;
  privateKeySealed: string;
  serial: string;
  notBefore: Date;
  notAfter: Date;
  renewAfter: Date;
}

/** An active domain as the edge projection needs it: where it routes and what it serves. */
export interface ActiveDomain {
  id: string;
  hostname: string;
  agent_id: string;
  slug: string;
  certificate_pem: string;
  private_key_sealed: string;
}

/** Inserted, or why not: another agent (of any account) holds the hostname. */
export type DomainInsert = 'inserted' | 'taken';

/**
 * Custom domains of agents (migration 008). The API's reads and writes, and the worker's:
 * `due` claims work, the `mark…` methods move a domain along verifying → issuing → active,
 * or to failed. Each write names `now`: the caller's clock, not Postgres's, stamps rows.
 */
export class DomainRepository {
  constructor(private readonly db: Knex) {}

  /**
   * ON CONFLICT on the hostname's unique index answers a claim of a taken hostname without
   * a read before the insert: of two requests racing for one hostname, exactly one inserts.
   * The agent's row must be locked by the caller, so the foreign key cannot fail here.
   */
  async insert(row: DomainRow): Promise<DomainInsert> {
    const inserted = await this.db('agent_domains').insert(row).onConflict('hostname').ignore().returning('id');
    return inserted.length === 1 ? 'inserted' : 'taken';
  }

  /** Oldest first: the order they were added in. */
  async listByAgent(agentId: string): Promise<DomainRow[]> {
    return this.db<DomainRow>('agent_domains').where({ agent_id: agentId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  async findForAgent(agentId: string, domainId: string): Promise<DomainRow | undefined> {
    return this.db<DomainRow>('agent_domains').where({ agent_id: agentId, id: domainId }).first();
  }

  async findByHostname(hostname: string): Promise<DomainRow | undefined> {
    return this.db<DomainRow>('agent_domains').where({ hostname }).first();
  }

  /** The deleted row (its hostname is what the edge forgets), or undefined when there was none. */
  async delete(agentId: string, domainId: string): Promise<DomainRow | undefined> {
    const [row] = await this.db<DomainRow>('agent_domains').where({ agent_id: agentId, id: domainId }).delete().returning('*');
    return row;
  }

  /** What counts against the plan's max_custom_domains: every domain of the account, whatever its status. */
  async countByAccount(accountId: string): Promise<number> {
    const row = await this.db('agent_domains').where({ account_id: accountId }).count('id as count').first();
    return Number(row?.count ?? 0);
  }

  /**
   * Asks for a check at `now` (POST …/verify). A failed domain starts over from
   * pending_verification with its attempts forgotten; an active one has nothing to verify
   * and is left as it is. Returns the row as it is after.
   */
  async requestCheck(agentId: string, domainId: string, now: Date): Promise<DomainRow | undefined> {
    const [row] = await this.db<DomainRow>('agent_domains')
      .where({ agent_id: agentId, id: domainId })
      .update({
        status: this.db.raw(`CASE WHEN status = 'failed' THEN 'pending_verification' ELSE status END`),
        attempts: this.db.raw(`CASE WHEN status = 'failed' THEN 0 ELSE attempts END`),
        next_attempt_at: this.db.raw(`CASE WHEN status = 'active' THEN next_attempt_at ELSE ? END`, [now]),
        updated_at: this.db.raw(`CASE WHEN status = 'active' THEN updated_at ELSE ? END`, [now]),
      } as never)
      .returning('*');
    return row;
  }

  /**
   * Domains with work due at `now`: verification or an order whose next attempt has come,
   * or an active certificate past its renew_after. Inside a transaction the rows stay
   * locked until it ends; a row another copy of the worker holds is skipped, not waited for.
   */
  async due(now: Date, limit: number): Promise<DomainRow[]> {
    return this.db<DomainRow>('agent_domains')
      .where((due) => due
        .where((work) => work.whereIn('status', DOMAIN_WORK_STATUSES).where('next_attempt_at', '<=', now))
        .orWhere((renewal) => renewal.where('status', 'active').where('renew_after', '<=', now)))
      .orderByRaw('coalesce(next_attempt_at, renew_after)')
      .limit(limit)
      .forUpdate()
      .skipLocked();
  }

  /** The TXT record is being looked up; due again at `nextAttemptAt` should the check not finish. */
  async markVerifying(id: string, nextAttemptAt: Date, now: Date): Promise<void> {
    await this.db('agent_domains').where({ id }).update({ status: 'verifying', next_attempt_at: nextAttemptAt, updated_at: now });
  }

  /** Ownership proven: a certificate is to be ordered, from `nextAttemptAt` on. Failures of the verification stage are forgotten. */
  async markIssuing(id: string, nextAttemptAt: Date, now: Date): Promise<void> {
    await this.db('agent_domains').where({ id }).update({
      status: 'issuing', reason: null, attempts: 0, verified_at: now, next_attempt_at: nextAttemptAt, updated_at: now,
    });
  }

  async markActive(id: string, certificate: IssuedCertificate, now: Date): Promise<void> {
    await this.db('agent_domains').where({ id }).update({
      status: 'active',
      reason: null,
      attempts: 0,
      next_attempt_at: null,
      certificate_pem: certificate.certificatePem,
      private_key_sealed: certificate.privateKeySealed,
      certificate_serial: certificate.serial,
      certificate_not_before: certificate.notBefore,
      certificate_not_after: certificate.notAfter,
      renew_after: certificate.renewAfter,
      issued_at: now,
      updated_at: now,
    });
  }

  /**
   * The verification or order failed. With `nextAttemptAt` the worker tries again then
   * (backoff); with null it has given up until the user asks again (POST …/verify). An
   * active domain whose renewal fails keeps its certificate and stays routed: call this only
   * for domains that are not, or whose certificate has expired.
   */
  async markFailed(id: string, reason: string, nextAttemptAt: Date | null, now: Date): Promise<void> {
    await this.db('agent_domains').where({ id }).update({
      status: 'failed', reason, next_attempt_at: nextAttemptAt, attempts: this.db.raw('attempts + 1'), updated_at: now,
    });
  }

  /** The TXT record is not (yet) there: stays pending_verification, with the reason shown to the user, until `nextAttemptAt`. */
  async keepPending(id: string, reason: string, nextAttemptAt: Date, now: Date): Promise<void> {
    await this.db('agent_domains').where({ id }).update({
      status: 'pending_verification', reason, next_attempt_at: nextAttemptAt, attempts: this.db.raw('attempts + 1'), updated_at: now,
    });
  }

  /** A renewal failed but the certificate still serves: stays active, retried at `retryAt` (renew_after moves there), with the reason kept. */
  async postponeRenewal(id: string, reason: string, retryAt: Date, now: Date): Promise<void> {
    await this.db('agent_domains').where({ id }).update({ reason, renew_after: retryAt, attempts: this.db.raw('attempts + 1'), updated_at: now });
  }

  /** Every domain the edge should route, with its agent's slug: what a rebuild of the edge projection writes. */
  async listActive(): Promise<ActiveDomain[]> {
    return this.db('agent_domains as d')
      .join('agents as a', 'a.id', 'd.agent_id')
      .where('d.status', 'active')
      .whereNotNull('d.certificate_pem')
      .whereNotNull('d.private_key_sealed')
      .select('d.id', 'd.hostname', 'd.agent_id', 'a.slug', 'd.certificate_pem', 'd.private_key_sealed')
      .orderBy('d.hostname');
  }

  /** When each active domain's certificate expires: what Prometheus alerts on before renewal runs out of time. */
  async certificateExpiries(): Promise<Map<string, Date>> {
    const rows: { hostname: string; certificate_not_after: Date }[] = await this.db('agent_domains')
      .where('status', 'active')
      .whereNotNull('certificate_not_after')
      .select('hostname', 'certificate_not_after');
    return new Map(rows.map((row) => [row.hostname, row.certificate_not_after]));
  }
}
