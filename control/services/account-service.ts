import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { AuditContext } from '../domain/audit.js';
import { notFound, PlatformError, validationError } from '../domain/errors.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { Role } from '../domain/roles.js';
import type { UserRow } from '../repositories/users.js';
import type { User } from '../schemas/auth.js';
import type { AgentRunner } from './agent-runner.js';
import { recordAudit } from './audit-log.js';
import { userView } from './auth-service.js';
import type { EdgeSync } from './edge-sync.js';
import type { WebhookEvents } from './webhook-events.js';
import type { Principal } from './principal.js';
import { memberKey, type AccessEnds } from './open-streams.js';

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
  /** Records member.removed for the account's webhooks, in the removing transaction. */
  events: WebhookEvents;
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
   * Changes a member's role (PATCH /account/users/{id}). Owners change any role; admins
   * move members and viewers between member and viewer only, never to or from admin or
   * owner. Under the account's row lock, so two owners demoting each other one after the
   * other see each other's change and the account keeps an owner (LAST_OWNER).
   */
  async changeRole(principal: Principal, audit: AuditContext, userId: string, role: Role): Promise<User> {
    const changed = await inTransaction(this.parts.db, async (repos) => {
      await repos.accounts.lock(principal.accountId);
      // The caller's role as of the lock: an owner demoted by a change committed meanwhile is no longer one.
      const actor = (await repos.members.find(principal.accountId, principal.userId))?.role;
      if (actor !== 'owner' && actor !== 'admin') throw new PlatformError('AUTHORISATION_DENIED', 'Only owners and admins change roles');
      const user = await repos.users.findMember(principal.accountId, { id: userId });
      if (!user) throw notFound('User');
      if (actor === 'admin' && !(ADMIN_ASSIGNABLE.has(user.role) && ADMIN_ASSIGNABLE.has(role))) {
        throw new PlatformError('AUTHORISATION_DENIED', 'An admin changes members and viewers between member and viewer only; owners change the rest');
      }
      if (user.role === role) return user;
      if (user.role === 'owner' && (await repos.members.countOwners(principal.accountId)) <= 1) throw lastOwner();
      await repos.members.setRole(principal.accountId, userId, role);
      await recordAudit(repos, audit, {
        accountId: principal.accountId,
        at: this.parts.clock.now(),
        action: 'user.role_change',
        target: { type: 'user', id: userId },
        details: { email: user.email, role_from: user.role, role_to: role },
      });
      return { ...user, role };
    });
    // A stream opened under the old role ends; the user's streams in other accounts go on.
    this.parts.streams?.announce({ scope: 'member', id: memberKey(principal.accountId, userId), reason: 'role_changed' });
    return userView(changed);
  }

  /**
   * Removes a member from the account (owners only): see removeMember. Their open streams end.
   */
  async deleteUser(principal: Principal, audit: AuditContext, userId: string): Promise<void> {
    assertOwner(principal, 'remove a user');
    const outcome = await inTransaction(this.parts.db, async (repos) => {
      const removed = await removeMember(repos, principal.accountId, userId, audit, this.parts.clock.now());
      await this.parts.events.recordMember(repos, 'member.removed', principal.accountId, userView(removed.member));
      return removed;
    });
    // Their streams in this account end; where they are a member elsewhere, those go on.
    this.parts.streams?.announce({ scope: 'member', id: memberKey(principal.accountId, userId), reason: 'user_removed' });
    this.parts.logger.info({ account_id: principal.accountId, user_id: userId, by: principal.userId, user_deleted: outcome.userDeleted }, 'member removed');
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
      // Members who belong to other accounts too keep their user (and move their default there).
      await repos.users.moveDefaultsOff(principal.accountId);
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
 * Removes `userId`'s membership of the account unless they are its last owner, inside the
 * caller's transaction (the API's DELETE /account/users/{id} and `npm run admin -- user
 * delete`), and records `user.remove`. A user left in no account is deleted with their
 * sessions and personal API keys; one who belongs elsewhere keeps them, and moves their
 * default account to their oldest other membership if this was it.
 */
export async function removeMember(repos: Repositories, accountId: string, userId: string, audit: AuditContext, now: Date): Promise<{ member: UserRow; userDeleted: boolean }> {
  await repos.accounts.lock(accountId);
  const user = await repos.users.findMember(accountId, { id: userId });
  if (!user) throw notFound('User');
  if (user.role === 'owner' && (await repos.members.countOwners(accountId)) <= 1) throw lastOwner();
  await repos.members.delete(accountId, userId);
  const [elsewhere] = await repos.members.ofUser(userId);
  if (!elsewhere) await repos.users.delete(userId);
  else await repos.users.moveDefault(userId, accountId, elsewhere.account_id);
  await recordAudit(repos, audit, {
    accountId,
    at: now,
    action: 'user.remove',
    target: { type: 'user', id: userId },
    details: { email: user.email, role: user.role, user_deleted: !elsewhere },
  });
  return { member: user, userDeleted: !elsewhere };
}

/** What an admin may change a role from and to: never admin or owner. */
const ADMIN_ASSIGNABLE: ReadonlySet<Role> = new Set(['member', 'viewer']);

const lastOwner = () => new PlatformError('LAST_OWNER', 'This is the last owner of the account: make another user owner first, or delete the account');

function assertOwner(principal: Principal, action: string): void {
  if (principal.role !== 'owner') throw new PlatformError('AUTHORISATION_DENIED', `Only an owner of the account may ${action}`);
}
