import { PlatformError } from '../domain/errors.js';
import type { Role } from '../domain/roles.js';
import type { Repositories } from '../repositories/index.js';
import type { Principal } from './principal.js';

/**
 * An account whose single sign-on is `required` takes credentials from SSO only: a session
 * opened by SSO, or a personal API key created by one. Its owners are the exception
 * (break-glass: an identity provider down or misconfigured must not lock the account out).
 * Called by AuthService.authenticate with the principal of the account the request acts
 * in (X-Account-Id or the default one), so every route is held to it, whichever account
 * the request chose. One read of a primary key for accounts without the requirement.
 */
export async function assertSsoSatisfied(repos: Pick<Repositories, 'sso'>, principal: Principal): Promise<void> {
  if (!(await ssoSatisfied(repos, principal))) throw new PlatformError('SSO_REQUIRED');
}

/** Whether `principal` may act in its account as assertSsoSatisfied decides: also asked of an open stream's credential again. */
export async function ssoSatisfied(repos: Pick<Repositories, 'sso'>, principal: Principal): Promise<boolean> {
  if (principal.role === 'owner' || !(await repos.sso.requiresSso(principal.accountId))) return true;
  return (await repos.sso.methodOf(principal)) === 'sso';
}

/**
 * A password sign-in to `user`'s default account: refused (SSO_REQUIRED) where that account
 * requires SSO, unless the user owns it; true when it is such an owner's break-glass sign-in,
 * which the caller records.
 */
export async function passwordSignInBreaksGlass(repos: Pick<Repositories, 'sso'>, user: { account_id: string; role: Role }): Promise<boolean> {
  if (!(await repos.sso.requiresSso(user.account_id))) return false;
  if (user.role !== 'owner') throw new PlatformError('SSO_REQUIRED');
  return true;
}
