import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { AuditContext } from '../domain/audit.js';
import { notFound, PlatformError, rateLimited, validationError } from '../domain/errors.js';
import { emailDomainAllowed, isLoopbackRedirect, SSO_HANDOFF_TTL_MS, SSO_LOGIN_TTL_MS } from '../domain/sso.js';
import { hashPassword } from '../crypto/passwords.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { ID_PREFIX, newId, newSecret, sha256Hex } from '../crypto/tokens.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { AccountSsoRow } from '../repositories/sso.js';
import type { UserRow } from '../repositories/users.js';
import type { SsoSettings, SsoSettingsBody } from '../schemas/sso.js';
import type { AuthService, SessionGrant } from './auth-service.js';
import { recordAudit } from './audit-log.js';
import type { Principal } from './principal.js';
import type { FixedWindowLimiter } from './rate-limiter.js';
import { DiscoveryFailedError, refusalReason, type OidcClient, type OidcIdentity, type OidcProvider } from './sso-client.js';

export interface SsoServiceDependencies {
  db: Knex;
  clock: Clock;
  box: SecretBox;
  auth: AuthService;
  oidc: OidcClient;
  /** PUBLIC_API_URL: where the provider sends the browser back, and where the console is. Null: SSO is unavailable (503). */
  publicApiUrl: string | null;
  logger: Logger;
  /** Counts sign-ins started per client address (SSO_START_RATE_LIMIT_PER_MINUTE). */
  limiter: FixedWindowLimiter;
  startsPerMinute: number;
}

/** What a one-time code handed to the console or the CLI starts with. */
const HANDOFF_PREFIX = 'ssoc_';

/**
 * OpenID Connect single sign-on (issue 39): an account's owners configure their identity
 * provider; its users sign in through it, and users of its allowed email domains are
 * created at their first sign-in. The browser never sees a session token in a URL: the
 * callback hands the console (or a CLI's loopback listener) a one-time code, which
 * POST /auth/sso/exchange trades for the session.
 */
export class SsoService {
  constructor(private readonly deps: SsoServiceDependencies) {}

  async settings(principal: Principal): Promise<SsoSettings> {
    assertOwner(principal);
    const row = await repositoriesOn(this.deps.db).sso.find(principal.accountId);
    if (!row) throw notFound('SSO settings');
    return this.view(row);
  }

  /** Saves the account's provider once its discovery document has been read with these settings. */
  async configure(principal: Principal, audit: AuditContext, body: SsoSettingsBody): Promise<SsoSettings> {
    assertOwner(principal);
    this.callbackUrl();
    await this.discover({ issuerUrl: body.issuer_url, clientId: body.client_id, clientSecret: body.client_secret });
    const row: AccountSsoRow = {
      account_id: principal.accountId,
      slug: body.slug,
      issuer_url: body.issuer_url,
      client_id: body.client_id,
      client_secret_sealed: this.deps.box.seal(body.client_secret),
      allowed_email_domains: body.allowed_email_domains.map((domain) => domain.toLowerCase()),
      default_role: body.default_role,
      required: body.required,
      updated_at: this.deps.clock.now(),
    };
    await inTransaction(this.deps.db, async (repos) => {
      if (!(await repos.sso.upsert(row))) throw new PlatformError('SSO_SLUG_TAKEN');
      const details = { slug: row.slug, issuer_url: row.issuer_url, client_id: row.client_id, allowed_email_domains: row.allowed_email_domains, default_role: row.default_role, required: row.required };
      await recordAudit(repos, audit, { accountId: principal.accountId, at: row.updated_at, action: 'sso.update', target: { type: 'account', id: principal.accountId }, details });
    });
    return this.view(row);
  }

  async remove(principal: Principal, audit: AuditContext): Promise<void> {
    assertOwner(principal);
    await inTransaction(this.deps.db, async (repos) => {
      if (!(await repos.sso.delete(principal.accountId))) throw notFound('SSO settings');
      await recordAudit(repos, audit, { accountId: principal.accountId, at: this.deps.clock.now(), action: 'sso.delete', target: { type: 'account', id: principal.accountId } });
    });
  }

  /** Where to send the browser to sign in to the account named `slug`; `returnTo` is a CLI's loopback listener. */
  async start(slug: string, returnTo: string | undefined, clientIp: string): Promise<string> {
    // Per address and before anything is looked up: a start writes a pending sign-in for whoever asks.
    const decision = await this.deps.limiter.hit(`sso-start:${clientIp}`, this.deps.startsPerMinute);
    if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
    if (returnTo !== undefined && !isLoopbackRedirect(returnTo)) {
      throw validationError([{ loc: ['query', 'redirect_uri'], msg: 'must be a loopback address with a port: http://127.0.0.1:<port>/… or http://[::1]:<port>/…', type: 'loopback' }]);
    }
    const config = await repositoriesOn(this.deps.db).sso.findBySlug(slug);
    // A slug no account has, well-formed or not, is not found, as any path id is.
    if (!config) throw notFound('SSO account');
    // Only now: what the caller sent is judged first, so an unset PUBLIC_API_URL is the answer to a real sign-in only.
    const callbackUrl = this.callbackUrl();
    const checks = this.deps.oidc.newChecks();
    const location = await this.deps.oidc.authorizationUrl(this.providerOf(config), callbackUrl, checks).catch(providerFailed);
    const now = this.deps.clock.now();
    await repositoriesOn(this.deps.db).sso.insertLogin({
      state_hash: sha256Hex(checks.state),
      account_id: config.account_id,
      code_verifier: checks.codeVerifier,
      nonce: checks.nonce,
      return_to: returnTo ?? null,
      expires_at: new Date(now.getTime() + SSO_LOGIN_TTL_MS),
    }, now);
    return location.href;
  }

  /**
   * The provider's redirect back: the state is taken (once), the code traded and the ID token
   * verified by openid-client, the user admitted; answers where the browser goes with its
   * one-time code. `params`: the callback's query parameters.
   */
  async callback(params: Record<string, string>): Promise<string> {
    const { state } = params;
    const now = this.deps.clock.now();
    const login = state ? await repositoriesOn(this.deps.db).sso.takeLogin(sha256Hex(state), now) : undefined;
    if (!login) throw new PlatformError('SSO_SIGN_IN_FAILED', 'The sign-in state is unknown, already used or expired; start again');
    const config = await repositoriesOn(this.deps.db).sso.find(login.account_id);
    if (!config) throw new PlatformError('SSO_SIGN_IN_FAILED', "The account's single sign-on was removed meanwhile");
    const identity = await this.deps.oidc
      .identify(this.providerOf(config), new URL(`${this.callbackUrl()}?${new URLSearchParams(params)}`), { state: state!, nonce: login.nonce, codeVerifier: login.code_verifier })
      .catch((error: unknown) => {
        // Which check failed is for the operator; the browser learns only that it did.
        this.deps.logger.warn({ account_id: config.account_id, reason: refusalReason(error) }, 'SSO callback refused');
        throw new PlatformError('SSO_SIGN_IN_FAILED');
      });
    if (identity.emailVerified === false) throw new PlatformError('SSO_SIGN_IN_FAILED', 'The identity provider says your email address is not verified');
    const user = await this.admit(config, identity);
    const code = newSecret(HANDOFF_PREFIX);
    await repositoriesOn(this.deps.db).sso.insertHandoff({
      code_hash: sha256Hex(code), user_id: user.id, expires_at: new Date(now.getTime() + SSO_HANDOFF_TTL_MS),
    }, now);
    return handoffLocation(login.return_to, this.deps.publicApiUrl!, code);
  }

  /** Trades a callback's one-time code for a session, once, within a minute. */
  async exchange(code: string, clientIp: string, requestId: string): Promise<SessionGrant> {
    const repos = repositoriesOn(this.deps.db);
    const handoff = await repos.sso.takeHandoff(sha256Hex(code), this.deps.clock.now());
    const user = handoff && (await repos.users.find(handoff.user_id));
    if (!user) throw new PlatformError('SSO_SIGN_IN_FAILED', 'The code is unknown, already used or expired; sign in again');
    return this.deps.auth.openSsoSession(user, { actor: { type: 'user', id: user.id, email: user.email, userId: user.id }, requestId, ip: clientIp });
  }

  /**
   * The member with the identity's email (compared without case) as they are; a user of an
   * allowed email domain who is not a member becomes one with the default role, created
   * first if need be, through the user repository's insert as every user is.
   */
  private async admit(config: AccountSsoRow, identity: OidcIdentity): Promise<UserRow> {
    const existing = await repositoriesOn(this.deps.db).users.findByEmail(identity.email);
    if (existing && (await repositoriesOn(this.deps.db).members.find(config.account_id, existing.id))) return existing;
    if (!emailDomainAllowed(identity.email, config.allowed_email_domains)) throw new PlatformError('SSO_DOMAIN_NOT_ALLOWED');
    const now = this.deps.clock.now();
    if (existing) {
      await repositoriesOn(this.deps.db).members.insert({ account_id: config.account_id, user_id: existing.id, role: config.default_role, created_at: now });
      return existing;
    }
    // No password signs in as this user until they set one: the hash is of a secret nobody holds.
    const row: UserRow = {
      id: newId(ID_PREFIX.user),
      account_id: config.account_id,
      email: identity.email,
      name: identity.name ?? identity.email.slice(0, identity.email.indexOf('@')),
      password_hash: await hashPassword(newSecret('')),
      role: config.default_role,
      created_at: now,
    };
    await repositoriesOn(this.deps.db).users.insert(row);
    return row;
  }

  private async discover(provider: OidcProvider): Promise<void> {
    try {
      await this.deps.oidc.discover(provider);
    } catch (error) {
      if (!(error instanceof DiscoveryFailedError)) throw error;
      // As a 422 names its field: the issuer is what to correct.
      throw new PlatformError('SSO_DISCOVERY_FAILED', error.message, { errors: [{ loc: ['body', 'issuer_url'], msg: error.message, type: 'discovery' }] });
    }
  }

  private providerOf(config: AccountSsoRow): OidcProvider {
    return { issuerUrl: config.issuer_url, clientId: config.client_id, clientSecret: this.deps.box.open(config.client_secret_sealed) };
  }

  private callbackUrl(): string {
    if (!this.deps.publicApiUrl) throw new PlatformError('SSO_NOT_AVAILABLE');
    return `${this.deps.publicApiUrl}/v1/auth/sso/callback`;
  }

  private view(row: AccountSsoRow): SsoSettings {
    return {
      issuer_url: row.issuer_url,
      client_id: row.client_id,
      client_secret_set: true,
      allowed_email_domains: row.allowed_email_domains,
      default_role: row.default_role,
      required: row.required,
      slug: row.slug,
      start_url: `${this.deps.publicApiUrl}/v1/auth/sso/${row.slug}/start`,
      callback_url: this.callbackUrl(),
      updated_at: row.updated_at.toISOString(),
    };
  }
}

function assertOwner(principal: Principal): void {
  if (principal.role !== 'owner') throw new PlatformError('AUTHORISATION_DENIED', "Only the account's owners manage its single sign-on");
}

function providerFailed(error: unknown): never {
  if (error instanceof DiscoveryFailedError) throw new PlatformError('SSO_PROVIDER_FAILED', error.message);
  throw error;
}

/**
 * Where the callback sends the browser: a CLI's loopback listener with the code in its query
 * (RFC 8252 §7.3), or the console's /sso page with the code in the fragment, which browsers
 * send to no server and keep out of Referer.
 */
function handoffLocation(returnTo: string | null, publicApiUrl: string, code: string): string {
  if (returnTo) {
    const url = new URL(returnTo);
    url.searchParams.set('code', code);
    return url.href;
  }
  return `${publicApiUrl}/sso#code=${encodeURIComponent(code)}`;
}
