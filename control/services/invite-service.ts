import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { hashPassword } from '../crypto/passwords.js';
import { ID_PREFIX, newId, newSecret, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import type { AuditContext } from '../domain/audit.js';
import { notFound, PlatformError, validationError } from '../domain/errors.js';
import type { Role } from '../domain/roles.js';
import type { InviteRow } from '../repositories/invites.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { UserRow } from '../repositories/users.js';
import type { Membership } from '../schemas/auth.js';
import type { AcceptInviteBody, CreateInviteBody, CreatedInvite, Invite } from '../schemas/invites.js';
import { recordAudit } from './audit-log.js';
import { userView, type AuthService, type SessionGrant } from './auth-service.js';
import type { WebhookEvents } from './webhook-events.js';
import { mailFailure, type InviteMailer } from './invite-mailer.js';
import type { Principal } from './principal.js';

export interface InviteServiceParts {
  db: Knex;
  clock: Clock;
  /** Opens the session of a user who registers through an invite. */
  auth: AuthService;
  /** Sends the invite by mail after the commit; none without SMTP_URL. */
  mailer?: InviteMailer;
  /** Records member.added for the account's webhooks, in the accepting transaction. */
  events: WebhookEvents;
  ttlHours: number;
  /** Where the console is served (PUBLIC_API_URL); null: the link is a path on the control API's own origin. */
  consoleUrl: string | null;
  logger: Logger;
}

/** What accepting did: a signed-in user joined, or a new user registered and signed in. */
export type Accepted = { joined: Membership } | { registered: SessionGrant };

/**
 * Invites of an email to the account (issue 39). The secret travels only in the link shown
 * to the inviter (and mailed to the invited email); the database keeps its hash. An invite
 * is accepted once, before it expires, unless revoked.
 */
export class InviteService {
  constructor(private readonly parts: InviteServiceParts) {}

  /** Owners invite any role; admins any but owner. */
  async create(principal: Principal, audit: AuditContext, input: CreateInviteBody): Promise<CreatedInvite> {
    assertInviter(principal);
    if (principal.role !== 'owner' && input.role === 'owner') throw new PlatformError('AUTHORISATION_DENIED', 'Only an owner invites an owner');
    const secret = newSecret(SECRET_PREFIX.invite);
    const now = this.parts.clock.now();
    const row: InviteRow = {
      id: newId(ID_PREFIX.invite),
      code_hash: sha256Hex(secret),
      account_id: principal.accountId,
      role: input.role,
      email: input.email,
      created_at: now,
      expires_at: new Date(now.getTime() + this.parts.ttlHours * 3_600_000),
      created_by: principal.userId,
      used_at: null,
      used_by: null,
      revoked_at: null,
    };
    await inTransaction(this.parts.db, async (repos) => {
      if (await repos.users.findMember(principal.accountId, { email: input.email })) throw new PlatformError('ALREADY_A_MEMBER');
      await repos.invites.insert(row);
      await recordAudit(repos, audit, { accountId: principal.accountId, at: now, action: 'invite.create', target: { type: 'invite', id: row.id }, details: { email: input.email, role: input.role } });
    });
    const link = `${this.parts.consoleUrl ?? ''}/invites#${secret}`;
    this.mail(row, link, principal.email);
    return { ...inviteView(row), link };
  }

  /** The invites that can still be accepted, newest first. */
  async pending(principal: Principal): Promise<Invite[]> {
    assertInviter(principal);
    return (await repositoriesOn(this.parts.db).invites.pending(principal.accountId, this.parts.clock.now())).map(inviteView);
  }

  async revoke(principal: Principal, audit: AuditContext, id: string): Promise<void> {
    assertInviter(principal);
    await inTransaction(this.parts.db, async (repos) => {
      const now = this.parts.clock.now();
      const revoked = await repos.invites.revoke(principal.accountId, id, now);
      if (!revoked) throw notFound('Pending invite');
      await recordAudit(repos, audit, { accountId: principal.accountId, at: now, action: 'invite.revoke', target: { type: 'invite', id }, details: { email: revoked.email ?? null, role: revoked.role } });
    });
  }

  /**
   * Signed in (`principal`): the user joins the account, if the invite is for their email.
   * Not signed in: registers a new user with the invited email, whatever REGISTRATION_MODE
   * says (the invite is the permission), and signs them in.
   */
  async accept(secret: string, principal: Principal | undefined, input: AcceptInviteBody, context: { requestId: string; ip: string }): Promise<Accepted> {
    const hash = sha256Hex(secret);
    if (principal) {
      const audit = { actor: { type: 'user' as const, id: principal.userId, email: principal.email, userId: principal.userId }, ...context };
      const joined = await inTransaction(this.parts.db, async (repos) => {
        const invite = await this.acceptable(repos, hash);
        if (invite.email.toLowerCase() !== principal.email.toLowerCase()) throw new PlatformError('INVITE_EMAIL_MISMATCH');
        if (!(await repos.members.insert({ account_id: invite.account_id, user_id: principal.userId, role: invite.role, created_at: this.parts.clock.now() }))) {
          throw new PlatformError('ALREADY_A_MEMBER');
        }
        await this.markAccepted(repos, invite, principal.userId, audit);
        const member = await repos.users.findMember(invite.account_id, { id: principal.userId });
        await this.parts.events.recordMember(repos, 'member.added', invite.account_id, userView(member!));
        return { account_id: invite.account_id, role: invite.role, default: false };
      });
      return { joined };
    }

    const { name, password } = input;
    if (name === undefined || password === undefined) {
      const missing = (['name', 'password'] as const).filter((field) => input[field] === undefined);
      throw validationError(missing.map((field) => ({ loc: ['body', field], msg: 'required to register through an invite without signing in', type: 'missing' })));
    }
    // Checked before the password is hashed (argon2 takes tens of milliseconds), and again under the lock.
    await this.acceptable(repositoriesOn(this.parts.db), hash);
    const passwordHash = await hashPassword(password);
    const user = await inTransaction(this.parts.db, async (repos) => {
      const invite = await this.acceptable(repos, hash);
      if (await repos.users.findByEmail(invite.email)) throw new PlatformError('EMAIL_ALREADY_REGISTERED', 'This email is already registered: sign in, then accept the invite');
      const now = this.parts.clock.now();
      const row: UserRow = { id: newId(ID_PREFIX.user), account_id: invite.account_id, email: invite.email, name, password_hash: passwordHash, role: invite.role, created_at: now };
      await repos.users.insert(row);
      await this.markAccepted(repos, invite, row.id, { actor: { type: 'user', id: row.id, email: row.email, userId: row.id }, ...context });
      await this.parts.events.recordMember(repos, 'member.added', invite.account_id, userView(row));
      return row;
    });
    return { registered: await this.parts.auth.openSessionFor(user) };
  }

  /** The invite behind `hash`, locked, if it can be accepted now. */
  private async acceptable(repos: Repositories, hash: string): Promise<AccountInvite> {
    const invite = await repos.invites.lockByHash(hash);
    if (!invite || invite.used_at || invite.revoked_at || !invite.email || !invite.account_id || !invite.role || !invite.expires_at) {
      throw new PlatformError('INVITE_NOT_FOUND');
    }
    if (invite.expires_at <= this.parts.clock.now()) throw new PlatformError('INVITE_EXPIRED');
    return invite as AccountInvite;
  }

  private async markAccepted(repos: Repositories, invite: AccountInvite, userId: string, audit: AuditContext): Promise<void> {
    const now = this.parts.clock.now();
    await repos.invites.markUsed(invite.id, userId, now);
    await recordAudit(repos, audit, { accountId: invite.account_id, at: now, action: 'invite.accept', target: { type: 'invite', id: invite.id }, details: { email: invite.email, role: invite.role } });
  }

  /** After the commit, and without holding up the answer: the link is in the response anyway. */
  private mail(invite: InviteRow, link: string, invitedBy: string): void {
    const { mailer, logger } = this.parts;
    if (!mailer) return;
    mailer
      .send({ to: invite.email!, link, role: invite.role!, invitedBy, expiresAt: invite.expires_at! })
      .then(() => logger.info({ account_id: invite.account_id, invite_id: invite.id }, 'invite mailed'))
      .catch((error: unknown) => logger.warn({ account_id: invite.account_id, invite_id: invite.id, error: mailFailure(error) }, 'invite mail not sent'));
  }
}

/** An account's invite: the fields the operator's codes leave null are set. */
type AccountInvite = InviteRow & { account_id: string; email: string; role: Role; expires_at: Date };

function inviteView(row: InviteRow): Invite {
  return {
    id: row.id,
    email: row.email!,
    role: row.role!,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at!.toISOString(),
    created_by: row.created_by ?? null,
  };
}

function assertInviter(principal: Principal): void {
  if (principal.role !== 'owner' && principal.role !== 'admin') throw new PlatformError('AUTHORISATION_DENIED', 'Only owners and admins manage invites');
}
