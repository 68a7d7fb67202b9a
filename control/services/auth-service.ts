import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { RegistrationMode } from '../config/config.js';
import type { AuditContext } from '../domain/audit.js';
import { PlatformError, rateLimited } from '../domain/errors.js';
import { hashPassword, verifyAgainstDecoy, verifyPassword } from '../crypto/passwords.js';
import { ID_PREFIX, newId, newSecret, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { UserRow } from '../repositories/users.js';
import type { CurrentUser, LoginBody, RegisterBody, User } from '../schemas/auth.js';
import type { AccessEndReason } from '../schemas/observability-streams.js';
import type { Principal } from './principal.js';
import { credentialKey, type AccessEnds } from './open-streams.js';
import type { FixedWindowLimiter } from './rate-limiter.js';
import { recordAudit } from './audit-log.js';
import { assertSsoSatisfied, passwordSignInBreaksGlass, ssoSatisfied } from './sso-requirement.js';
import type { SignInMethod } from '../domain/sso.js';

export interface SessionGrant {
  token: string;
  expires_at: string;
  user: User;
}

export interface AuthSettings {
  registrationMode: RegistrationMode;
  sessionTtlMinutes: number;
  loginRateLimitPerMinute: number;
  registrationRateLimitPerHour: number;
}

const HOUR_MS = 3_600_000;

export class AuthService {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly limiter: FixedWindowLimiter,
    private readonly settings: AuthSettings,
    /** Told of a signed-out session: the streams it opened end. */
    private readonly streams?: AccessEnds,
  ) {}

  registrationMode(): RegistrationMode {
    return this.settings.registrationMode;
  }

  /** Creates a user: the owner of a new free account, or a member of the account an invite names. */
  async register(input: RegisterBody, clientIp: string): Promise<SessionGrant> {
    const mode = this.settings.registrationMode;
    if (mode === 'closed') throw new PlatformError('REGISTRATION_CLOSED');
    // Per address, not per email: each account brings its own per-token limit, so one
    // address minting accounts would multiply it. Counted before the password is hashed.
    const decision = await this.limiter.hit(`register:${clientIp}`, this.settings.registrationRateLimitPerHour, HOUR_MS);
    if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
    if (mode === 'invite' && !input.invite_code) {
      throw new PlatformError('INVALID_INVITE', 'An invite code is required to register');
    }
    // Hash before the transaction: argon2 takes tens of milliseconds and needs no lock.
    const passwordHash = await hashPassword(input.password);
    const now = this.clock.now();

    const user = await inTransaction(this.db, async (repos) => {
      if (await repos.users.findByEmail(input.email)) throw new PlatformError('EMAIL_ALREADY_REGISTERED');
      const userId = newId(ID_PREFIX.user);
      const invite = input.invite_code ? await repos.invites.claim(sha256Hex(input.invite_code), userId, now) : undefined;
      if (input.invite_code && !invite) throw new PlatformError('INVALID_INVITE');

      let accountId = invite?.account_id ?? null;
      if (!accountId) {
        accountId = newId(ID_PREFIX.account);
        await repos.accounts.insert({ id: accountId, plan: 'free', exempt: false, created_at: now });
      }
      const row: UserRow = {
        id: userId,
        account_id: accountId,
        email: input.email,
        name: input.name,
        password_hash: passwordHash,
        role: invite?.account_id ? (invite.role ?? 'member') : 'owner',
        created_at: now,
      };
      await repos.users.insert(row);
      return row;
    }).catch(rethrowUniqueEmail);

    return this.openSession(user);
  }

  /**
   * The same 401 for an unknown email and a wrong password, in about the same time. A wrong
   * password for a known user is recorded (auth.login_failed, that user as the actor, in its
   * own insert: nothing else changes); an unknown email belongs to no account's log, so only
   * the request log sees it. The password is never recorded.
   */
  async login(input: LoginBody, clientIp: string, requestId: string): Promise<SessionGrant> {
    const decision = await this.limiter.hit(`login:${clientIp}:${input.email.toLowerCase()}`, this.settings.loginRateLimitPerMinute);
    if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);

    const user = await repositoriesOn(this.db).users.findByEmail(input.email);
    const valid = user ? await verifyPassword(user.password_hash, input.password) : await verifyAgainstDecoy(input.password);
    if (!user || !valid) {
      if (user) await this.recordSignIn(repositoriesOn(this.db), user, 'auth.login_failed', { actor: actorOf(user), requestId, ip: clientIp });
      throw new PlatformError('AUTHENTICATION_FAILED', 'Email or password is wrong');
    }
    const audit = { actor: actorOf(user), requestId, ip: clientIp };
    // Where the default account requires SSO, only its owners get in by password, and that is recorded.
    if (await passwordSignInBreaksGlass(repositoriesOn(this.db), user)) await this.recordSignIn(repositoriesOn(this.db), user, 'auth.break_glass', audit);
    return this.openSession(user, audit);
  }

  /**
   * Resolves a bearer token (a personal API key or a session token) to its principal, acting
   * in `accountId` (X-Account-Id) or, without one, in the user's default account. An account
   * the user does not belong to is refused alike whether it exists or not (403).
   */
  async authenticate(token: string, accountId?: string): Promise<Principal> {
    const hash = sha256Hex(token);
    const principal = token.startsWith(SECRET_PREFIX.apiKey)
      ? await this.apiKeyPrincipal({ hash })
      : token.startsWith(SECRET_PREFIX.session) ? await this.sessionPrincipal(hash) : undefined;
    if (!principal) throw new PlatformError('AUTHENTICATION_FAILED');
    const selected = await this.inAccount(principal, accountId);
    // details.header tells clients which of their choices was refused, so they need not read the message (agentctl's hint).
    if (!selected) throw new PlatformError('AUTHORISATION_DENIED', 'You are not a member of the account X-Account-Id names', { header: 'X-Account-Id' });
    await assertSsoSatisfied(repositoriesOn(this.db), selected);
    return selected;
  }

  /** The principal acting in `accountId`, with its role there; undefined when the user is not a member. */
  private async inAccount(principal: Principal, accountId: string | undefined): Promise<Principal | undefined> {
    if (accountId === undefined || accountId === principal.accountId) return principal;
    const membership = await repositoriesOn(this.db).members.find(accountId, principal.userId);
    return membership && { ...principal, accountId, role: membership.role };
  }

  /**
   * Why the credential `principal` was established from no longer grants what authenticate
   * granted it, or undefined while it does (an open stream's re-check): the credential gone
   * (an expired session), its user no longer a member of the account or in another role
   * there, or the account now requiring single sign-on of it.
   */
  async accessLost(principal: Principal): Promise<AccessEndReason | undefined> {
    const { sessionHash, apiKeyId } = principal;
    const found = sessionHash ? await this.sessionPrincipal(sessionHash) : apiKeyId ? await this.apiKeyPrincipal({ id: apiKeyId }) : undefined;
    if (found?.userId !== principal.userId) return 'token_invalid';
    const current = await this.inAccount(found, principal.accountId);
    if (!current) return 'user_removed';
    if (current.role !== principal.role) return 'role_changed';
    if (!(await ssoSatisfied(repositoriesOn(this.db), current))) return 'sso_required';
    return undefined;
  }

  private async apiKeyPrincipal(key: { hash: string } | { id: string }): Promise<Principal | undefined> {
    const user = await repositoriesOn(this.db).apiKeys.findUser(key);
    return user && { userId: user.id, email: user.email, accountId: user.account_id, role: user.role, via: 'api_key', apiKeyId: user.api_key_id };
  }

  private async sessionPrincipal(hash: string): Promise<Principal | undefined> {
    const user = await repositoriesOn(this.db).sessions.findLiveUser(hash, this.clock.now());
    return user && { userId: user.id, email: user.email, accountId: user.account_id, role: user.role, via: 'session', sessionHash: hash };
  }

  /**
   * Ends the presenting session. A personal API key is refused as POST /api-keys refuses
   * it (403): it is not a session, and a script that sent one meant to revoke the key,
   * which DELETE /api-keys/{id} does with a session.
   */
  async logout(principal: Principal, audit: AuditContext): Promise<void> {
    const sessionHash = principal.via === 'session' ? principal.sessionHash : undefined;
    if (!sessionHash) {
      throw new PlatformError('AUTHORISATION_DENIED', 'Only a console session signs out; revoke a personal API key with DELETE /api-keys/{id}');
    }
    await inTransaction(this.db, async (repos) => {
      await repos.sessions.delete(sessionHash);
      await recordAudit(repos, audit, { accountId: principal.accountId, at: this.clock.now(), action: 'auth.logout', target: { type: 'user', id: principal.userId } });
    });
    this.streams?.announce({ scope: 'credential', id: credentialKey.session(sessionHash), reason: 'signed_out' });
  }

  /** The user as they act in this request (the selected account and their role there), with every account they belong to (the default first). */
  async me(principal: Principal): Promise<CurrentUser> {
    const repos = repositoriesOn(this.db);
    const user = await repos.users.find(principal.userId);
    if (!user) throw new PlatformError('AUTHENTICATION_FAILED');
    const memberships = (await repos.members.ofUser(user.id))
      .map((m) => ({ account_id: m.account_id, role: m.role, default: m.account_id === user.account_id }))
      .sort((a, b) => Number(b.default) - Number(a.default));
    return { ...userView({ ...user, account_id: principal.accountId, role: principal.role }), memberships };
  }

  /** Opens a session for a user just created outside `register` (an accepted invite): as a registration's, it records no sign-in. */
  openSessionFor(user: UserRow): Promise<SessionGrant> {
    return this.openSession(user);
  }

  /** Opens a session for a user their account's identity provider vouched for (control/services/sso-service.ts). */
  openSsoSession(user: UserRow, audit: AuditContext): Promise<SessionGrant> {
    return this.openSession(user, audit, 'sso');
  }

  /** A sign-in (with `audit`) records auth.login with the session; a registration's first session records nothing. */
  private async openSession(user: UserRow, audit?: AuditContext, method: SignInMethod = 'password'): Promise<SessionGrant> {
    const token = newSecret(SECRET_PREFIX.session);
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.settings.sessionTtlMinutes * 60_000);
    await inTransaction(this.db, async (repos) => {
      const opened = await repos.sessions.insert({ token_hash: sha256Hex(token), user_id: user.id, created_at: now, expires_at: expiresAt, method });
      // The user was deleted (DELETE /account/users/{id}) after the password check.
      if (!opened) throw new PlatformError('AUTHENTICATION_FAILED', 'Email or password is wrong');
      if (audit) await this.recordSignIn(repos, user, 'auth.login', audit, method === 'sso' ? { method } : undefined);
    });
    return { token, expires_at: expiresAt.toISOString(), user: userView(user) };
  }

  private recordSignIn(repos: Repositories, user: UserRow, action: 'auth.login' | 'auth.login_failed' | 'auth.break_glass', audit: AuditContext, details?: { method: SignInMethod }): Promise<void> {
    return recordAudit(repos, audit, { accountId: user.account_id, at: this.clock.now(), action, target: { type: 'user', id: user.id }, details });
  }
}

/** A user signing in acts as themselves, before any principal exists. */
function actorOf(user: UserRow): AuditContext['actor'] {
  return { type: 'user', id: user.id, email: user.email, userId: user.id };
}

export function userView(user: UserRow): User {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    role: user.role,
    account_id: user.account_id,
    created_at: user.created_at.toISOString(),
  };
}

/** Two registrations of one email racing past the check: the unique index decides. */
function rethrowUniqueEmail(error: unknown): never {
  if ((error as { code?: string; constraint?: string }).constraint === 'users_email_unique') {
    throw new PlatformError('EMAIL_ALREADY_REGISTERED');
  }
  throw error;
}
