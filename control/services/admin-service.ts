import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId, newSecret, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { SYSTEM_CONTEXT } from '../domain/audit.js';
import { isPlanName, type PlanName } from '../domain/plans.js';
import { isRole, type Role } from '../domain/roles.js';
import { notFound, PlatformError } from '../domain/errors.js';
import type { AccountRow } from '../repositories/accounts.js';
import { inTransaction, type Repositories } from '../repositories/index.js';
import { removeMember } from './account-service.js';
import { recordAudit } from './audit-log.js';
import type { EdgeSync } from './edge-sync.js';

/**
 * What operators do that no endpoint does: invites, plans, exemptions and roles. The audit
 * log names the platform (`system`) as the actor: the command runs with no user signed in.
 * An invite without an account (to found a new one) belongs to no account's log.
 */
export class AdminService {
  /**
   * Without `edge` (no Redis at hand), a plan change reaches the edge's per-agent limit at
   * the control API's next reconcile pass instead of at once.
   */
  constructor(private readonly db: Knex, private readonly clock: Clock, private readonly edge?: EdgeSync) {}

  /** An invite code, shown once; only its hash is kept. With an account, it joins that account. */
  async createInvite(accountId?: string, role: Role = 'member'): Promise<string> {
    const code = newSecret(SECRET_PREFIX.invite);
    const id = newId(ID_PREFIX.invite);
    await inTransaction(this.db, async (repos) => {
      if (accountId && !(await repos.accounts.find(accountId))) throw notFound(`Account ${accountId}`);
      await repos.invites.insert({
        id,
        code_hash: sha256Hex(code),
        account_id: accountId ?? null,
        role: accountId ? role : null,
        created_at: this.clock.now(),
        used_at: null,
        used_by: null,
      });
      if (accountId) {
        await recordAudit(repos, SYSTEM_CONTEXT, { accountId, at: this.clock.now(), action: 'invite.create', target: { type: 'invite', id }, details: { role } });
      }
    });
    return code;
  }

  async setPlan(accountRef: string, plan: string): Promise<void> {
    if (!isPlanName(plan)) throw new PlatformError('VALIDATION_ERROR', `plan must be free or pro, not "${plan}"`);
    await inTransaction(this.db, async (repos) => {
      const { accountId, before } = await this.updateAccount(repos, accountRef, { plan });
      await recordAudit(repos, SYSTEM_CONTEXT, {
        accountId,
        at: this.clock.now(),
        action: 'account.plan_change',
        target: { type: 'account', id: accountId },
        details: { plan_from: before.plan, plan_to: plan },
      });
      // The plan carries max_agent_rpm, the edge's per-agent limit: project it with the change.
      await this.edge?.putAccountAgents(repos, accountId);
    });
  }

  async setExempt(accountRef: string, exempt: boolean): Promise<void> {
    await inTransaction(this.db, (repos) => this.updateAccount(repos, accountRef, { exempt }));
  }

  async setRole(email: string, role: string): Promise<void> {
    if (!isRole(role)) throw new PlatformError('VALIDATION_ERROR', `role must be owner, admin, member or viewer, not "${role}"`);
    await inTransaction(this.db, async (repos) => {
      const user = await repos.users.findByEmail(email);
      if (!user) throw notFound(`User ${email}`);
      await repos.members.setRole(user.account_id, user.id, role);
      await recordAudit(repos, SYSTEM_CONTEXT, {
        accountId: user.account_id,
        at: this.clock.now(),
        action: 'user.role_change',
        target: { type: 'user', id: user.id },
        details: { email: user.email, role_from: user.role, role_to: role },
      });
    });
  }

  /** Removes a user from their default account, and deletes them when it was their only one (removeMember); never an account's last owner (LAST_OWNER). */
  async deleteUser(email: string): Promise<void> {
    await inTransaction(this.db, async (repos) => {
      const user = await repos.users.findByEmail(email);
      if (!user) throw notFound(`User ${email}`);
      await removeMember(repos, user.account_id, user.id, SYSTEM_CONTEXT, this.clock.now());
    });
  }

  /** An account by its id (acc_…) or by the email of one of its users. */
  private async updateAccount(repos: Repositories, accountRef: string, changes: { plan?: PlanName; exempt?: boolean }): Promise<{ accountId: string; before: AccountRow }> {
    const accountId = accountRef.includes('@') ? (await repos.users.findByEmail(accountRef))?.account_id : accountRef;
    // Under the account's lock, as every change that counts against its quotas.
    const before = accountId ? await repos.accounts.lock(accountId) : undefined;
    if (!accountId || !before) throw notFound(`Account ${accountRef}`);
    await repos.accounts.update(accountId, changes);
    return { accountId, before };
  }
}
