import { Membership, SessionGrant } from '../../schemas/auth.js';
import { ErrorBody } from '../../schemas/common.js';
import { AcceptInviteBody, CreatedInvite, CreateInviteBody, InviteList } from '../../schemas/invites.js';
import type { InviteService } from '../../services/invite-service.js';
import { defineRoute } from '../route.js';

/** Inviting people to the account and accepting an invite (docs/teams-and-sso.md). */
export const accountInviteRoutes = (invites: InviteService) => [
  defineRoute({
    method: 'post',
    path: '/account/invites',
    operationId: 'createAccountInvite',
    tag: 'Account',
    summary: 'Invite someone to the account',
    description: 'Invite an email to the account with a role (owners and admins; only an owner invites an owner). The link carries a one-time secret, shown only here; with SMTP_URL it is mailed to the invited email too. It expires after INVITE_TTL_HOURS.',
    auth: 'any',
    body: CreateInviteBody,
    responses: {
      201: { description: 'Invited: pass on the link (or it was mailed)', schema: CreatedInvite },
      403: { description: 'AUTHORISATION_DENIED: members and viewers do not invite; an admin does not invite an owner', schema: ErrorBody },
      409: { description: 'ALREADY_A_MEMBER: that email already belongs to the account', schema: ErrorBody },
    },
    handler: async ({ principal, audit, body }) => ({ status: 201, body: await invites.create(principal, audit, body) }),
  }),
  defineRoute({
    method: 'get',
    path: '/account/invites',
    operationId: 'listAccountInvites',
    tag: 'Account',
    summary: "List the account's pending invites",
    description: 'The invites that can still be accepted (not used, revoked or expired), newest first (owners and admins)',
    auth: 'any',
    responses: {
      200: { description: 'The pending invites', schema: InviteList },
      403: { description: 'AUTHORISATION_DENIED: members and viewers do not see invites', schema: ErrorBody },
    },
    handler: async ({ principal }) => ({ status: 200, body: { invites: await invites.pending(principal) } }),
  }),
  defineRoute({
    method: 'delete',
    path: '/account/invites/:id',
    operationId: 'revokeAccountInvite',
    tag: 'Account',
    summary: 'Revoke an invite',
    description: 'Revoke a pending invite: its link is refused from now on (owners and admins)',
    auth: 'any',
    responses: {
      204: { description: 'Revoked' },
      403: { description: 'AUTHORISATION_DENIED: members and viewers do not revoke invites', schema: ErrorBody },
      404: { description: 'NOT_FOUND: no pending invite with this id in the account', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params }) => {
      await invites.revoke(principal, audit, params.id!);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/auth/invites/:secret/accept',
    operationId: 'acceptInvite',
    tag: 'Auth',
    summary: 'Accept an invite',
    description: "Accept an invite by its link's secret. Signed in: the user (whose email must be the invited one) joins the account. Without a token: registers a new user with the invited email, `name` and `password`, even when REGISTRATION_MODE is invite or closed, and signs them in.",
    auth: 'optional',
    body: AcceptInviteBody,
    responses: {
      200: { description: 'Joined: the new membership (select it with X-Account-Id)', schema: Membership },
      201: { description: 'Registered and signed in as the new user', schema: SessionGrant },
      403: { description: 'INVITE_EMAIL_MISMATCH: the invite is for another email', schema: ErrorBody },
      404: { description: 'INVITE_NOT_FOUND: no such invite, or it was used or revoked', schema: ErrorBody },
      409: { description: 'ALREADY_A_MEMBER: the signed-in user already belongs to the account; or EMAIL_ALREADY_REGISTERED: sign in, then accept', schema: ErrorBody },
      410: { description: 'INVITE_EXPIRED', schema: ErrorBody },
    },
    handler: async ({ principal, params, body, requestId, clientIp }) => {
      const accepted = await invites.accept(params.secret!, principal, body, { requestId, ip: clientIp });
      return 'joined' in accepted ? { status: 200, body: accepted.joined } : { status: 201, body: accepted.registered };
    },
  }),
];
