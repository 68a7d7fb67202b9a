import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { AuditContext } from '../domain/audit.js';
import { notFound, PlatformError, validationError } from '../domain/errors.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { User } from '../schemas/auth.js';
import type { AgentRunner } from './agent-runner.js';
import { recordAudit } from './audit-log.js';
import { userView } from './auth-service.js';
import type { EdgeSync } from './edge-sync.js';
import type { Principal } from './principal.js';
import type { AccessEnds } from './open-streams.js';

/** What an AccountService works with. */
export interface AccountServiceParts {
  db: Knex;
  clock: Clock;
  /** Takes a deleted account's agents off the edge, in the deleting transaction. */
  edge: EdgeSync;
  /** Removes a deleted account's agents' jobs, after the commit. */
  runner: AgentRunner;
  logger: Logger;
  /** Told of a removed user or a deleted account: the streams their tokens opened end. */
  streams?: AccessEnds;
}

/** An account's users, and the end of a user or of the whole account. */
export class AccountService {
  constructor(private readonly parts: AccountServiceParts) {}

  /** Owners and admins see who is in the account (the ids DELETE /account/users/{id} takes). */
  async listUsers(principal: Principal): Promise<User[]> {
    if (principal.role !== 'owner' && principal.role !== 'admin') {
      throw new PlatformError('AUTHORISATION_DENIED', 'Only owners and admins list the users of the account');
    }
    return (await repositoriesOn(this.parts.db).users.ofAccount(principal.accountId)).map(userView);
  }

  /**
   * Removes a user with their sessions and personal API keys (cascaded in one statement).
   * Under the account's row lock, so two owners removing each other one after the other
   * see each other's removal and the account keeps an owner.
   */
  async deleteUser(principal: Principal, audit: AuditContext, userId: string): Promise<void> {
    assertOwner(principal, 'delete a user');
    await inTransaction(this.parts.db, (repos) => removeUser(repos, principal.accountId, userId, audit, this.parts.clock.now()));
    this.parts.streams?.announce({ scope: 'user', id: userId, reason: 'user_removed' });
    this.parts.logger.info({ account_id: principal.accountId, user_id: userId, by: principal.userId }, 'user deleted');
  }

  /**
   * Removes the account and everything in it in one transaction (see
   * AccountRepository.delete), so a crash leaves either all of it or none. Under the account's
   * lock: a create, deploy or plan change waiting on it finds the account gone. The agents'
   * rows are deleted (and so locked) before their routes and custom hostnames leave Redis, so
   * an edge rebuild cannot put them back; if Redis refuses, everything rolls back
   * (EDGE_UNAVAILABLE). The containers are removed after the commit, as DELETE /agents/{id}
   * removes them: by a queued step, or, after a crash, by the next reconcile, which removes
   * every job Postgres no longer holds.
   */
  async deleteAccount(principal: Principal, confirm: string): Promise<void> {
    assertOwner(principal, 'delete the account');
    if (confirm !== principal.accountId) {
      throw validationError([{ loc: ['body', 'confirm'], msg: `must be this account's id, ${principal.accountId}`, type: 'value_error' }]);
    }
    const agents = await inTransaction(this.parts.db, async (repos) => {
      if (!(await repos.accounts.lock(principal.accountId))) throw notFound('Account');
      const owned = await repos.agents.ofAccount(principal.accountId);
      // Read before the delete cascades to them: the agents' custom hostnames leave the edge with them.
      const domains: { slug: string; hostname: string }[] = [];
      for (const agent of owned) for (const domain of await repos.domains.listByAgent(agent.id)) domains.push({ slug: agent.slug, hostname: domain.hostname });
      await repos.accounts.delete(principal.accountId);
      await this.parts.edge.write(async (projection) => {
        for (const agent of owned) await projection.removeAgent(agent.slug);
        for (const { slug, hostname } of domains) await projection.removeDomain(slug, hostname);
      });
      return owned;
    });
    this.parts.streams?.announce({ scope: 'account', id: principal.accountId, reason: 'account_deleted' });
    for (const agent of agents) this.parts.runner.request('remove', agent);
    this.parts.logger.info({ account_id: principal.accountId, by: principal.userId, agents: agents.length }, 'account deleted');
  }
}

/**
 * Removes one user of the account unless they are its last owner, inside the caller's
 * transaction (the API's DELETE /account/users/{id} and `npm run admin -- user delete`),
 * and records it (`user.delete`, beyond the list: who may act changed, as with a role change).
 */
export async function removeUser(repos: Repositories, accountId: string, userId: string, audit: AuditContext, now: Date): Promise<void> {
  await repos.accounts.lock(accountId);
  const user = await repos.users.find(userId);
  if (!user || user.account_id !== accountId) throw notFound('User');
  if (user.role === 'owner' && (await repos.users.countOwners(accountId)) <= 1) {
    throw new PlatformError('LAST_OWNER', 'This is the last owner of the account: make another user owner first, or delete the account');
  }
  await repos.users.delete(accountId, userId);
  await recordAudit(repos, audit, { accountId, at: now, action: 'user.delete', target: { type: 'user', id: userId }, details: { email: user.email, role: user.role } });
}

function assertOwner(principal: Principal, action: string): void {
  if (principal.role !== 'owner') throw new PlatformError('AUTHORISATION_DENIED', `Only an owner of the account may ${action}`);
}
