import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ConfirmButton } from '../confirm-button.js';
import { Outcome } from '../outcome.js';
import { ROLES, type CurrentUser, type User } from '../types.js';
import { useAction } from '../use-action.js';

/**
 * The account's users with a role choice each, and Remove for owners (only they remove
 * users). The API decides what an admin may change and keeps the last owner (409 LAST_OWNER):
 * its refusal is shown, and the list reloaded so the choice shows the role as it is.
 */
export function TeamMembers({ me }: { me: CurrentUser }) {
  const [users, setUsers] = useState<User[] | null>(null);
  const { error, done, act, fail } = useAction();

  const load = () => api<{ users: User[] }>('GET', '/account/users').then((answer) => setUsers(answer.users), fail);
  useEffect(() => { void load(); }, []);

  // Read again whatever the answer: a refused change leaves the choice showing the role as it is.
  const changeRole = async (user: User, role: string) => {
    await act(() => api('PATCH', `/account/users/${user.id}`, { role }), `${user.email} is now ${role}.`);
    await load();
  };
  const remove = async (user: User) => {
    await act(() => api('DELETE', `/account/users/${user.id}`), `${user.email} removed from the account.`);
    await load();
  };

  return (
    <>
      <h2>Members</h2>
      <Outcome error={error} done={done} />
      {users && (
        <div class="table-scroll">
          <table aria-label="Members">
            <thead><tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              {users.map((user) => (
                <tr key={user.id}>
                  <td>{user.name}{user.id === me.id ? ' (you)' : ''}<br /><span class="member-email">{user.email}</span></td>
                  <td>
                    <select aria-label={`Role of ${user.email}`} value={user.role} onChange={(event) => void changeRole(user, event.currentTarget.value)}>
                      {ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
                    </select>
                  </td>
                  <td>
                    {me.role === 'owner' && (
                      <ConfirmButton
                        label="Remove"
                        name={`Remove ${user.email}`}
                        question={`Remove ${user.email} from the account?`}
                        yes="Yes, remove"
                        no="Keep them"
                        groupLabel={`Confirm removing ${user.email}`}
                        danger
                        onConfirm={() => void remove(user)}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
