import type { AccountService } from '../../services/account-service.js';
import { DeleteAccountBody } from '../../schemas/account.js';
import { User } from '../../schemas/auth.js';
import { ChangeRoleBody } from '../../schemas/invites.js';
import { ErrorBody } from '../../schemas/common.js';
import { UserList } from '../../schemas/users.js';
import { defineRoute } from '../route.js';

/** Who is in the account, and removing a user or the account itself (docs/operations.md, "Sessions and deletion"). */
export const accountUserRoutes = (accounts: AccountService) => [
  defineRoute({
    method: 'get',
    path: '/account/users',
    operationId: 'listAccountUsers',
    tag: 'Account',
    summary: "List the account's users",
    description: "The account's users (owners and admins)",
    auth: 'any',
    responses: {
      200: { description: 'The users, oldest first', schema: UserList },
      403: { description: 'AUTHORISATION_DENIED: members and viewers do not list users', schema: ErrorBody },
    },
    handler: async ({ principal }) => ({ status: 200, body: { users: await accounts.listUsers(principal) } }),
  }),
  defineRoute({
    method: 'patch',
    path: '/account/users/:id',
    operationId: 'changeAccountUserRole',
    tag: 'Account',
    summary: "Change a user's role",
    description: 'Change the role of a user of the account. Owners change any role; admins move users between member and viewer only.',
    auth: 'any',
    body: ChangeRoleBody,
    responses: {
      200: { description: 'The user with their new role', schema: User },
      403: { description: 'AUTHORISATION_DENIED: members and viewers change no role; admins neither make nor change admins and owners', schema: ErrorBody },
      404: { description: 'NOT_FOUND: no such user in this account', schema: ErrorBody },
      409: { description: 'LAST_OWNER: the account would be left without an owner', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params, body }) => ({ status: 200, body: await accounts.changeRole(principal, audit, params.id!, body.role) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/account/users/:id',
    operationId: 'deleteAccountUser',
    tag: 'Account',
    summary: 'Remove a user from the account',
    description: 'Remove a user from the account (owners only). A user who belongs to no other account is deleted with their sessions and personal API keys; one who does keeps them for their other accounts.',
    auth: 'any',
    responses: {
      204: { description: 'Removed: their tokens are refused in this account from the next request on' },
      403: { description: 'AUTHORISATION_DENIED: only an owner deletes users', schema: ErrorBody },
      404: { description: 'NOT_FOUND: no such user in this account', schema: ErrorBody },
      409: { description: 'LAST_OWNER: the account would be left without an owner', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params }) => {
      await accounts.deleteUser(principal, audit, params.id!);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/account',
    operationId: 'deleteAccount',
    tag: 'Account',
    summary: 'Delete the account',
    description: 'Delete the account and everything in it: agents stopped, keys revoked, users and data removed (owners only)',
    auth: 'any',
    writes: true,
    body: DeleteAccountBody,
    responses: {
      204: { description: 'Deleted: its access keys are refused at the edge and its tokens here; its containers are being removed' },
      403: { description: 'AUTHORISATION_DENIED: only an owner deletes the account', schema: ErrorBody },
      503: { description: "EDGE_UNAVAILABLE: the edge's Redis did not take the removal; nothing was deleted", schema: ErrorBody },
    },
    handler: async ({ principal, body }) => {
      await accounts.deleteAccount(principal, body.confirm);
      return { status: 204 };
    },
  }),
];
