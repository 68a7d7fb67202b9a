import { useEffect, useState } from 'preact/hooks';
import { AccountSwitcher } from './account-switcher.js';
import { api } from './api.js';
import { AcceptInvitePage, InviteRegistrationPage } from './pages/accept-invite.js';
import { AccountPage } from './pages/account.js';
import { AgentPage } from './pages/agent.js';
import { AgentsPage } from './pages/agents.js';
import { NewAgentPage } from './pages/new-agent.js';
import { SignInPage } from './pages/sign-in.js';
import { SsoCallbackPage } from './pages/sso-sign-in.js';
import { TeamPage } from './pages/team.js';
import { onLinkClick, usePath } from './router.js';
import { session } from './session.js';

export function App() {
  const [token, setToken] = useState(session.token());
  const [account, setAccount] = useState(session.account());
  useEffect(() => session.subscribe(() => { setToken(session.token()); setAccount(session.account()); }), []);
  const path = usePath();
  if (path === '/sso') return <SsoCallbackPage />;
  if (!token) return path === '/invites' ? <InviteRegistrationPage /> : <SignInPage />;
  return (
    <>
      <header class="top">
        <strong>Agent platform</strong>
        <nav aria-label="Main">
          <a href="/agents" onClick={onLinkClick}>Agents</a>
          <a href="/team" onClick={onLinkClick}>Team</a>
          <a href="/account" onClick={onLinkClick}>Account</a>
        </nav>
        <AccountSwitcher />
        <button type="button" onClick={() => void signOut()}>Sign out</button>
      </header>
      {/* Keyed by the account: switching it starts every page afresh, with that account's data. */}
      <main key={account ?? 'default'}>{page(path)}</main>
    </>
  );
}

/** Ends the session on the server as well, so a copy of the token stops working; the tab forgets it whatever the answer. */
async function signOut(): Promise<void> {
  await api('POST', '/auth/logout').catch(() => undefined);
  session.signOut();
}

function page(path: string) {
  if (path === '/agents/new') return <NewAgentPage />;
  const agent = /^\/agents\/([^/]+)$/.exec(path);
  if (agent) return <AgentPage id={decodeURIComponent(agent[1]!)} />;
  if (path === '/account') return <AccountPage />;
  if (path === '/team') return <TeamPage />;
  if (path === '/invites') return <AcceptInvitePage />;
  return <AgentsPage />;
}
