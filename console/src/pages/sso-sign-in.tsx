import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { Field } from '../field.js';
import { navigate } from '../router.js';
import { session } from '../session.js';

/** "Sign in with SSO": the browser goes to the control API's start, which sends it on to the account's identity provider. */
export function SsoSignIn() {
  const submit = (event: Event) => {
    event.preventDefault();
    const slug = String(new FormData(event.currentTarget as HTMLFormElement).get('slug') ?? '').trim();
    location.assign(`/v1/auth/sso/${encodeURIComponent(slug)}/start`);
  };
  return (
    <form onSubmit={submit} aria-label="Single sign-on">
      <Field label="Account SSO name" name="slug" required pattern="[a-z0-9-]{3,40}" />
      <button type="submit">Continue with SSO</button>
    </form>
  );
}

/**
 * Where the callback sends the browser: /sso#code=<one-time code>. The code, read from the
 * fragment (which no server sees) and wiped from the address bar, is traded for the session.
 */
export function SsoCallbackPage() {
  const [error, setError] = useState('');
  useEffect(() => {
    const code = new URLSearchParams(location.hash.slice(1)).get('code');
    history.replaceState(null, '', '/sso');
    if (!code) return setError('No sign-in code in the address: start again.');
    api<{ token: string }>('POST', '/auth/sso/exchange', { code }).then((grant) => {
      session.signIn(grant.token);
      navigate('/agents');
    }, (caught) => setError(messageOf(caught)));
  }, []);
  return (
    <main class="narrow">
      <h1>Signing in</h1>
      {error ? <p role="alert" class="error">{error}</p> : <p>Signing you in…</p>}
      <p><a href="/">Back to sign-in</a></p>
    </main>
  );
}
