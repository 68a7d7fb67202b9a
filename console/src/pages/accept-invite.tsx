import { useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { Field } from '../field.js';
import { navigate } from '../router.js';
import { session } from '../session.js';
import type { Membership } from '../types.js';
import { SignInPage } from './sign-in.js';

/** The invite's secret: the link is /invites#<secret>, a fragment no server and no referrer sees. */
const secretOf = () => decodeURIComponent(location.hash.slice(1));

const acceptPath = (secret: string) => `/auth/invites/${encodeURIComponent(secret)}/accept`;

/** Once used, the secret leaves the address bar and the history, then the agents list opens. */
function leave(): void {
  history.replaceState(null, '', '/invites');
  navigate('/agents');
}

/** Signed in: the user joins the inviting account, then acts in it. */
export function AcceptInvitePage() {
  const [secret] = useState(secretOf);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const accept = async () => {
    setBusy(true);
    setError('');
    try {
      const joined = await api<Membership>('POST', acceptPath(secret), {});
      session.selectAccount(joined.account_id);
      leave();
    } catch (caught) {
      setError(messageOf(caught));
      setBusy(false);
    }
  };
  return (
    <section class="narrow">
      <h1>Join an account</h1>
      {secret ? <p>You were invited to join another account. Accept to join it and switch to it.</p> : <p>This link has no invite in it: ask for the link again.</p>}
      {error && <p role="alert" class="error">{error}</p>}
      {secret && <button type="button" disabled={busy} onClick={() => void accept()}>Accept the invite</button>}
    </section>
  );
}

/** Not signed in: register with the invited email (whatever the registration mode), or sign in first and then accept. */
export function InviteRegistrationPage() {
  const [secret] = useState(secretOf);
  const [signingIn, setSigningIn] = useState(false);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  if (signingIn) return <SignInPage />;

  const register = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    setError('');
    try {
      const grant = await api<{ token: string }>('POST', acceptPath(secret), { name: String(form.get('name') ?? ''), password: String(form.get('password') ?? '') });
      session.signIn(grant.token);
      leave();
    } catch (caught) {
      setError(messageOf(caught));
      setBusy(false);
    }
  };
  return (
    <main class="narrow">
      <h1>Join an account</h1>
      <p>You were invited: choose your name and a password to create your user with the invited email.</p>
      <form onSubmit={register} aria-label="Register through the invite">
        <Field label="Name" name="name" required maxLength={128} autoComplete="name" />
        <Field label="Password" name="password" type="password" required minLength={8} maxLength={1024} autoComplete="new-password" />
        {error && <p role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy || !secret}>Join</button>
      </form>
      <p>
        <button type="button" class="link" onClick={() => setSigningIn(true)}>I already have a user: sign in, then accept</button>
      </p>
    </main>
  );
}
