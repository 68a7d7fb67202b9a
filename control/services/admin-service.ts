import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId, newSecret, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { isPlanName, type PlanName } from '../domain/plans.js';
import { isRole, type Role } from '../domain/roles.js';
import { notFound, PlatformError } from '../errors.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import { removeUser } from './account-service.js';
import type { EdgeSync } from './edge-sync.js';

/** What operators do that no endpoint does: invites, plans, exemptions and roles. */
export class AdminService {
  /**
   * Without `edge` (no Redis at hand), a plan change reaches the edge's per-agent limit at
   * the control API's next reconcile pass instead of at once.
   */
  constructor(private readonly db: Knex, private readonly clock: Clock, private readonly edge?: EdgeSync) {}

  /** An invite code, shown once; only its hash is kept. With an account, it joins that account. */
  async createInvite(accountId?: string, role: Role = 'member'): Promise<string> {
    const code = newSecret(SECRET_PREFIX.invite);
    await inTransaction(this.db, async (repos) => {
      if (accountId && !(await repos.accounts.find(accountId))) throw notFound(`Account ${accountId}`);
      await repos.invites.insert({
        id: newId(ID_PREFIX.invite),
        code_hash: sha256Hex(code),
        account_id: accountId ?? null,
        role: accountId ? role : null,
        created_at: this.clock.now(),
        used_at: null,
        used_by: null,
      });
    });
    return code;
  }

  async setPlan(accountRef: string, plan: string): Promise<void> {
    if (!isPlanName(plan)) throw new PlatformError('VALIDATION_ERROR', `plan must be free or pro, not "${plan}"`);
    await inTransaction(this.db, async (repos) => {
      const accountId = await this.updateAccount(repos, accountRef, { plan });
      // The plan carries max_agent_rpm, the edge's per-agent limit: project it with the change.
      await this.edge?.putAccountAgents(repos, accountId);
    });
  }

  async setExempt(accountRef: string, exempt: boolean): Promise<void> {
    await inTransaction(this.db, (repos) => this.updateAccount(repos, accountRef, { exempt }));
  }

  async setRole(email: string, role: string): Promise<void> {
    if (!isRole(role)) throw new PlatformError('VALIDATION_ERROR', `role must be owner, admin, member or viewer, not "${role}"`);
    const repos = repositoriesOn(this.db);
    const user = await repos.users.findByEmail(email);
    if (!user) throw notFound(`User ${email}`);
    await repos.users.setRole(user.id, role);
  }

  /** Removes a user with their sessions and personal API keys; never an account's last owner (LAST_OWNER). */
  async deleteUser(email: string): Promise<void> {
    await inTransaction(this.db, async (repos) => {
      const user = await repos.users.findByEmail(email);
      if (!user) throw notFound(`User ${email}`);
      await removeUser(repos, user.account_id, user.id);
    });
  }

  /** An account by its id (acc_…) or by the email of one of its users. */
  private async updateAccount(repos: Repositories, accountRef: string, changes: { plan?: PlanName; exempt?: boolean }): Promise<string> {
    const accountId = accountRef.includes('@') ? (await repos.users.findByEmail(accountRef))?.account_id : accountRef;
    // Under the account's lock, as every change that counts against its quotas.
    if (!accountId || !(await repos.accounts.lock(accountId))) throw notFound(`Account ${accountRef}`);
    await repos.accounts.update(accountId, changes);
    return accountId;
  }
}
