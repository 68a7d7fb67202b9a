import { Outcome } from '../outcome.js';
import { useCurrentUser } from '../use-current-user.js';
import { SsoSettingsPanel } from './sso-settings.js';
import { TeamInvites } from './team-invites.js';
import { TeamMembers } from './team-members.js';

/**
 * Who is in the account and who is invited (issue 39). Owners and admins manage the team;
 * the API shows members and viewers neither the list nor the invites, so neither does this page.
 */
export function TeamPage() {
  const { me, error } = useCurrentUser();
  const manages = me?.role === 'owner' || me?.role === 'admin';
  return (
    <section>
      <h1>Team</h1>
      <Outcome error={error} done="" />
      {me && !manages && (
        <p>You are a {me.role} of this account: only its owners and admins see and change who belongs to it. Ask one of them to invite a colleague.</p>
      )}
      {me && manages && (
        <>
          <TeamMembers me={me} />
          <TeamInvites role={me.role} />
          {me.role === 'owner' && <SsoSettingsPanel />}
        </>
      )}
    </section>
  );
}
