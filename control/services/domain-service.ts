import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId, randomBase62 } from '../crypto/tokens.js';
import type { AgentRow } from '../domain/agent.js';
import type { AuditContext } from '../domain/audit.js';
import { checkHostname, type DomainRow } from '../domain/custom-domain.js';
import { notFound, PlatformError, quotaExceeded, validationError } from '../domain/errors.js';
import { limitsOf } from '../domain/plans.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { Domain } from '../schemas/domains.js';
import { recordAudit } from './audit-log.js';
import { domainView } from './domain-presenter.js';
import type { Principal } from './principal.js';
import { assertAgentOf } from './agent-of-account.js';

/** What the service needs of the edge: to stop routing a hostname, before a delete is answered. */
export interface DomainEdge {
  removeDomain(slug: string, hostname: string): Promise<void>;
}

export interface DomainServiceDependencies {
  db: Knex;
  clock: Clock;
  /** AGENT_DOMAIN: the platform's own, which no custom domain may be or be under. */
  agentDomain: string;
  edge: DomainEdge;
  /** Tells the domain worker there is work now (a new domain, a check asked for), rather than at its next pass. */
  kick: () => void;
}

/** Base62 characters of the TXT value: about 190 bits, so no one guesses another's. */
const VERIFICATION_VALUE_LENGTH = 32;

/**
 * Custom domains of an agent (issue 34): claiming a hostname, listing, deleting, asking for a
 * check. Verifying and issuing are the domain worker's; this service only records what was
 * asked and wakes it. Viewers are refused writes by the route (`writes: true`).
 */
export class DomainService {
  constructor(private readonly deps: DomainServiceDependencies) {}

  async create(principal: Principal, audit: AuditContext, agentId: string, input: string): Promise<Domain> {
    const hostname = this.checkedHostname(input);
    const now = this.deps.clock.now();
    const row: DomainRow = {
      id: newId(ID_PREFIX.domain),
      account_id: principal.accountId,
      agent_id: agentId,
      hostname,
      status: 'pending_verification',
      verification_value: randomBase62(VERIFICATION_VALUE_LENGTH),
      reason: null,
      certificate_pem: null,
      private_key_sealed: null,
      certificate_serial: null,
      certificate_not_before: null,
      certificate_not_after: null,
      renew_after: null,
      // Due at once: the record may already be in place.
      next_attempt_at: now,
      attempts: 0,
      created_at: now,
      updated_at: now,
      verified_at: null,
      issued_at: null,
    };
    await inTransaction(this.deps.db, async (repos) => {
      // The account's lock first, as every quota check takes it, then the agent's: parallel claims count one after another.
      const account = await repos.accounts.lock(principal.accountId);
      if (!account) throw notFound('Account');
      await lockAgentOf(repos, principal, agentId);
      if (!account.exempt) {
        const limit = limitsOf(account.plan).max_custom_domains;
        const count = await repos.domains.countByAccount(principal.accountId);
        if (count + 1 > limit) throw quotaExceeded('max_custom_domains', limit, count + 1);
      }
      if ((await repos.domains.insert(row)) === 'taken') {
        throw new PlatformError('DOMAIN_TAKEN', `${hostname} is already claimed by an agent on this platform`, { hostname });
      }
      await recordAudit(repos, audit, { accountId: principal.accountId, at: now, action: 'domain.create', target: { type: 'domain', id: row.id }, agentId, details: { hostname } });
    });
    this.deps.kick();
    return domainView(row);
  }

  async list(principal: Principal, agentId: string): Promise<Domain[]> {
    const repos = repositoriesOn(this.deps.db);
    await assertAgentOf(repos, principal, agentId);
    return (await repos.domains.listByAgent(agentId)).map(domainView);
  }

  async get(principal: Principal, agentId: string, domainId: string): Promise<Domain> {
    const repos = repositoriesOn(this.deps.db);
    await assertAgentOf(repos, principal, agentId);
    const row = await repos.domains.findForAgent(agentId, domainId);
    if (!row) throw notFound('Domain');
    return domainView(row);
  }

  /**
   * The edge forgets the hostname inside the transaction, after the row is gone from it:
   * once the 204 is sent no request for it is routed, and should the edge refuse, nothing is
   * deleted (the transaction rolls back) and the caller can try again.
   */
  async delete(principal: Principal, audit: AuditContext, agentId: string, domainId: string): Promise<void> {
    await inTransaction(this.deps.db, async (repos) => {
      const agent = await lockAgentOf(repos, principal, agentId);
      const row = await repos.domains.delete(agentId, domainId);
      if (!row) throw notFound('Domain');
      await recordAudit(repos, audit, {
        accountId: principal.accountId, at: this.deps.clock.now(), action: 'domain.delete', target: { type: 'domain', id: domainId }, agentId, details: { hostname: row.hostname },
      });
      await this.deps.edge.removeDomain(agent.slug, row.hostname);
    });
  }

  /** Asks for a check now: a pending domain is looked at on the worker's next turn, a failed one starts over. */
  async requestCheck(principal: Principal, agentId: string, domainId: string): Promise<Domain> {
    const row = await inTransaction(this.deps.db, async (repos) => {
      await assertAgentOf(repos, principal, agentId);
      return repos.domains.requestCheck(agentId, domainId, this.deps.clock.now());
    });
    if (!row) throw notFound('Domain');
    this.deps.kick();
    return domainView(row);
  }

  private checkedHostname(input: string): string {
    const checked = checkHostname(input, this.deps.agentDomain);
    if ('problem' in checked) {
      const type = checked.rule === 'reserved' ? 'value_error.hostname.reserved' : 'value_error.hostname';
      throw validationError([{ loc: ['body', 'hostname'], msg: `the hostname ${checked.problem}`, type }]);
    }
    return checked.hostname;
  }
}

/** Domain changes lock the agent's row, so an edge rebuild never interleaves with them. */
async function lockAgentOf(repos: Repositories, principal: Principal, agentId: string): Promise<AgentRow> {
  const agent = await repos.agents.findForUpdate(principal.accountId, agentId);
  if (!agent) throw notFound('Agent');
  return agent;
}
