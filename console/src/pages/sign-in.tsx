import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { Field } from '../field.js';
import { session } from '../session.js';
import { SsoSignIn } from './sso-sign-in.js';

type Mode = 'open' | 'invite' | 'closed';

/** Sign in, or create an account as the API's registration mode allows. */
export function SignInPage() {
  const [registering, setRegistering] = useState(false);
  const [mode, setMode] = useState<Mode | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api<{ mode: Mode }>('GET', '/auth/registration').then((answer) => setMode(answer.mode), (caught) => setError(messageOf(caught)));
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const field = (name: string) => String(form.get(name) ?? '');
    setBusy(true);
    setError('');
    try {
      const body = registering
        ? { email: field('email'), password: field('password'), name: field('name'), ...(mode === 'invite' ? { invite_code: field('invite_code') } : {}) }
        : { email: field('email'), password: field('password') };
      const grant = await api<{ token: string }>('POST', registering ? '/auth/register' : '/auth/login', body);
      session.signIn(grant.token);
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="narrow">
      <h1>{registering ? 'Create account' : 'Sign in'}</h1>
      <form onSubmit={submit}>
        {registering && <Field label="Name" name="name" required autoComplete="name" />}
        <Field label="Email" name="email" type="email" required autoComplete="email" />
        <Field label="Password" name="password" type="password" required minLength={registering ? 8 : 1} autoComplete={registering ? 'new-password' : 'current-password'} />
        {registering && mode === 'invite' && <Field label="Invite code" name="invite_code" required />}
        {error && <p role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy}>{registering ? 'Create account' : 'Sign in'}</button>
      </form>
      {!registering && <SsoSignIn />}
      {mode === 'closed' && <p class="note">Registration is closed on this platform: ask its operator for an account.</p>}
      {mode !== 'closed' && mode !== null && (
        <p>
          <button type="button" class="link" onClick={() => { setRegistering(!registering); setError(''); }}>
            {registering ? 'I have an account: sign in' : 'Create account'}
          </button>
        </p>
      )}
    </main>
  );
}
