import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { AccountPage } from './pages/account.js';
import { AgentPage } from './pages/agent.js';
import { AgentsPage } from './pages/agents.js';
import { NewAgentPage } from './pages/new-agent.js';
import { SignInPage } from './pages/sign-in.js';
import { onLinkClick, usePath } from './router.js';
import { session } from './session.js';

export function App() {
  const [token, setToken] = useState(session.token());
  useEffect(() => session.subscribe(() => setToken(session.token())), []);
  const path = usePath();
  if (!token) return <SignInPage />;
  return (
    <>
      <header class="top">
        <strong>Agent platform</strong>
        <nav aria-label="Main">
          <a href="/agents" onClick={onLinkClick}>Agents</a>
          <a href="/account" onClick={onLinkClick}>Account</a>
        </nav>
        <button type="button" onClick={() => void signOut()}>Sign out</button>
      </header>
      <main>{page(path)}</main>
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
  return <AgentsPage />;
}
