import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { CopyButton } from '../copy-button.js';
import { Field } from '../field.js';
import { Outcome } from '../outcome.js';
import { ROLES, type CreatedInvite, type Invite, type User } from '../types.js';
import { useAction } from '../use-action.js';

/**
 * Invite a colleague by email with a role, then pass on the one-time link, shown only now
 * (the platform mails it too when it has SMTP); the pending invites, each revocable. Only an
 * owner invites an owner, so an admin is not offered that role.
 */
export function TeamInvites({ role }: { role: User['role'] }) {
  const [invites, setInvites] = useState<Invite[]>([]);
  const [created, setCreated] = useState<CreatedInvite | null>(null);
  const [invitedRole, setInvitedRole] = useState('member');
  const { error, done, act, fail } = useAction();

  const load = () => api<{ invites: Invite[] }>('GET', '/account/invites').then((answer) => setInvites(answer.invites), fail);
  useEffect(() => { void load(); }, []);
  const actThenLoad = async (work: () => Promise<unknown>, success: string) => { if (await act(work, success)) await load(); };
  const invite = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const body = { email: String(new FormData(form).get('email') ?? '').trim(), role: invitedRole };
    void actThenLoad(async () => { setCreated(await api<CreatedInvite>('POST', '/account/invites', body)); form.reset(); }, `${body.email} invited as ${body.role}.`);
  };
  const revoke = (pending: Invite) => actThenLoad(() => api('DELETE', `/account/invites/${pending.id}`), `The invite of ${pending.email} revoked.`);
  // Without PUBLIC_API_URL the API answers a path on its own origin, which serves this console.
  const link = created && new URL(created.link, location.origin).href;

  return (
    <>
      <h2>Invites</h2>
      <form class="inline" onSubmit={invite} aria-label="Invite a colleague">
        <Field label="Email" name="email" type="email" required maxLength={254} autoComplete="off" />
        <label class="field">
          <span>Role</span>
          <select name="role" value={invitedRole} onChange={(event) => setInvitedRole(event.currentTarget.value)}>
            {ROLES.filter((offered) => role === 'owner' || offered !== 'owner').map((offered) => <option key={offered} value={offered}>{offered}</option>)}
          </select>
        </label>
        <button type="submit">Invite</button>
      </form>
      {created && link && (
        <div class="once" role="status">
          <p>The link that lets {created.email} join as {created.role}, until {new Date(created.expires_at).toLocaleString()}; it is shown only now:</p>
          <code class="secret">{link}</code> <CopyButton text={link} label="Copy the invite link" />
          <button type="button" onClick={() => setCreated(null)}>Done</button>
        </div>
      )}
      <Outcome error={error} done={done} />
      {invites.length === 0 ? <p>No pending invites.</p> : (
        <ul class="keys" aria-label="Pending invites">
          {invites.map((pending) => (
            <li key={pending.id}>
              <span class="label">{pending.email}</span> as {pending.role}, until <time dateTime={pending.expires_at}>{new Date(pending.expires_at).toLocaleDateString()}</time>{' '}
              <button type="button" aria-label={`Revoke the invite of ${pending.email}`} onClick={() => revoke(pending)}>Revoke</button>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
