import type { Static } from '@sinclair/typebox';
import type { User } from '../../control/schemas/auth.js';
import type { CreatedInvite, InviteList } from '../../control/schemas/invites.js';
import type { UserList } from '../../control/schemas/users.js';
import type { ApiClient } from '../api-client.js';
import { command, group } from '../command.js';
import { CliError, EXIT } from '../errors.js';
import { printJson, table } from '../terminal.js';

/** The API's roles (control/domain/roles.ts): agentctl takes schema types only, so the list is spelt here too. */
const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;

const user = { type: 'string', demandOption: true, describe: 'a user id (usr_…) or email of the account' } as const;
const role = { type: 'string', choices: ROLES, demandOption: true, describe: 'owner, admin, member or viewer' } as const;

/** The member `ref` names, by id or (case-insensitively) email; exit 1 when the account has none. */
async function memberOf(api: ApiClient, ref: string): Promise<User> {
  const { users } = await api.request<UserList>('GET', '/account/users');
  const found = users.find((member) => member.id === ref || member.email.toLowerCase() === ref.toLowerCase());
  if (!found) throw new CliError(`no user ${JSON.stringify(ref)} in this account: agentctl team list shows them`, EXIT.refused);
  return found;
}

export const team = group('team', "The account's members and invites: invite, list, change roles, remove", [
  command({
    command: 'invite <email>',
    examples: [['$0 team invite grace@example.com --role member', 'prints the link to pass on (mailed too when the platform sends mail)']],
    describe: 'Invite someone to the account with a role; the one-time link is printed once (owners and admins)',
    builder: (yargs) => yargs.positional('email', { type: 'string', demandOption: true, describe: 'who to invite' }).option('role', { ...role, demandOption: false, default: 'member' }),
    run: async (args, { api, terminal, json }) => {
      const created = await api.request<CreatedInvite>('POST', '/account/invites', { body: { email: args.email, role: args.role } });
      if (json) return printJson(terminal, created);
      terminal.out(created.link);
      terminal.err(`Invited ${created.email} as ${created.role} (${created.id}), until ${created.expires_at}: the link works once`);
    },
  }),
  command({
    command: 'list',
    examples: [['$0 team list', 'members, then pending invites']],
    describe: "The account's members and its pending invites (owners and admins)",
    builder: (yargs) => yargs,
    run: async (_args, { api, terminal, json }) => {
      const { users } = await api.request<UserList>('GET', '/account/users');
      const { invites } = await api.request<Static<typeof InviteList>>('GET', '/account/invites');
      if (json) return printJson(terminal, { users, invites });
      terminal.out(table(['id', 'email', 'role', 'status', 'since'], [
        ...users.map((member) => [member.id, member.email, member.role, 'member', member.created_at]),
        ...invites.map((invite) => [invite.id, invite.email, invite.role, `invited until ${invite.expires_at}`, invite.created_at]),
      ], terminal.paint));
    },
  }),
  command({
    command: 'role <user> <role>',
    examples: [['$0 team role grace@example.com admin', '']],
    describe: "Change a member's role (owners; admins between member and viewer only)",
    builder: (yargs) => yargs.positional('user', user).positional('role', role),
    run: async (args, { api, terminal, json }) => {
      const member = await memberOf(api, args.user);
      const changed = await api.request<User>('PATCH', `/account/users/${encodeURIComponent(member.id)}`, { body: { role: args.role } });
      if (json) return printJson(terminal, changed);
      terminal.err(`${changed.email} is ${changed.role}`);
    },
  }),
  command({
    command: 'rm <user>',
    examples: [['$0 team rm grace@example.com', ''], ['$0 team rm inv_2Wq7Hc4Mz9Kd1Vt6Lb3X', 'revokes a pending invite']],
    describe: 'Remove a member from the account (owners), or revoke a pending invite by its id (inv_…)',
    builder: (yargs) => yargs.positional('user', { ...user, describe: 'a user id or email, or an invite id (inv_…)' }),
    run: async (args, { api, terminal }) => {
      if (args.user.startsWith('inv_')) {
        await api.request('DELETE', `/account/invites/${encodeURIComponent(args.user)}`);
        return terminal.err(`Revoked invite ${args.user}`);
      }
      const member = await memberOf(api, args.user);
      await api.request('DELETE', `/account/users/${encodeURIComponent(member.id)}`);
      terminal.err(`Removed ${member.email} from the account`);
    },
  }),
]);
