/**
 * The audit log's vocabulary (issue 20): the actions exactly as the issue names them, and
 * who may act. `user.delete` is ours beyond the list: removing a user is as much a
 * change of who may act as a role change is. Since memberships (issue 39) a removal is
 * `user.remove`; `user.delete` stays for the events recorded before.
 */
export const AUDIT_ACTIONS = [
  'agent.create',
  'agent.update',
  'agent.deploy',
  'agent.scale',
  'agent.delete',
  'agent.rollback',
  'deployment.promote',
  'deployment.abort',
  'access_key.create',
  'access_key.revoke',
  'api_key.create',
  'api_key.revoke',
  'auth.login',
  'auth.login_failed',
  'auth.logout',
  'auth.break_glass',
  'sso.update',
  'sso.delete',
  'account.plan_change',
  'webhook.create',
  'webhook.delete',
  'domain.create',
  'domain.delete',
  'session.read',
  'session.delete',
  'invite.create',
  'invite.accept',
  'invite.revoke',
  'user.role_change',
  'user.remove',
  'user.delete',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_ACTOR_TYPES = ['user', 'api_key', 'system'] as const;

export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/**
 * Who made a change. A user acting through a console session is `user` with their id; through
 * a personal API key, `api_key` with the key's id and the owning user's email. `system` (no id,
 * no email) is the platform itself: the autoscaler, the reconciler, the admin command.
 * `userId` is the person behind a user or API-key actor, so the log's actor_id filter finds
 * what someone did through their keys too; it is not shown in the event.
 */
export interface AuditActor {
  type: AuditActorType;
  id: string | null;
  email: string | null;
  userId?: string | null;
}

/** Where a change came from, passed by the caller to every service method that changes state. */
export interface AuditContext {
  actor: AuditActor;
  /** The X-Request-Id of the response that made the change; null outside a request. */
  requestId: string | null;
  ip: string | null;
}

export const SYSTEM_ACTOR: AuditActor = Object.freeze({ type: 'system', id: null, email: null });

/** The platform acting on its own (a background loop, the admin command): no request, no address. */
export const SYSTEM_CONTEXT: AuditContext = Object.freeze({ actor: SYSTEM_ACTOR, requestId: null, ip: null });

/**
 * What an event's `details` may hold: small, flat values. Names of changed fields, counts
 * and states are fine; a secret (key, token, password, env value, model API key) never is.
 */
export type AuditDetails = Record<string, string | number | boolean | null | string[]>;
