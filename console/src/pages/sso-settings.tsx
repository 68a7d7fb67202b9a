import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { ConfirmButton } from '../confirm-button.js';
import { Field } from '../field.js';
import { Outcome } from '../outcome.js';
import type { SsoSettings, SsoSettingsBody } from '../types.js';
import { useAction } from '../use-action.js';

const SSO_ROLES = ['admin', 'member', 'viewer'] as const satisfies readonly SsoSettingsBody['default_role'][];

/**
 * The owner's single sign-on settings (docs/teams-and-sso.md). The API never returns the
 * client secret, only that one is set; saving sends it again, as PUT replaces the settings whole.
 */
export function SsoSettingsPanel() {
  const [settings, setSettings] = useState<SsoSettings | null>(null);
  const [defaultRole, setDefaultRole] = useState<SsoSettings['default_role']>('member');
  const show = (saved: SsoSettings) => {
    setSettings(saved);
    setDefaultRole(saved.default_role);
  };
  const { error, done, act, fail } = useAction();

  useEffect(() => {
    api<SsoSettings>('GET', '/account/sso').then(show, (caught) => {
      if (!(caught instanceof ApiError && caught.code === 'NOT_FOUND')) fail(caught);
    });
  }, []);

  const save = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const fields = new FormData(form);
    const text = (name: string) => String(fields.get(name) ?? '').trim();
    const body: SsoSettingsBody = {
      slug: text('slug'),
      issuer_url: text('issuer_url'),
      client_id: text('client_id'),
      client_secret: text('client_secret'),
      allowed_email_domains: text('allowed_email_domains').split(/[\s,]+/).filter(Boolean),
      default_role: defaultRole,
      required: fields.get('required') === 'on',
    };
    void act(async () => {
      show(await api<SsoSettings>('PUT', '/account/sso', body));
      (form.elements.namedItem('client_secret') as HTMLInputElement).value = '';
    }, 'Single sign-on saved.');
  };
  const remove = () => act(async () => { await api('DELETE', '/account/sso'); setSettings(null); }, 'Single sign-on removed: everyone signs in with a password again.');

  return (
    <>
      <h2>Single sign-on</h2>
      {settings && (
        <p class="note">
          Users start at <span class="url">{settings.start_url}</span>; register <span class="url">{settings.callback_url}</span> as the redirect URI at the identity provider.
        </p>
      )}
      <form class="narrow" onSubmit={save} aria-label="Single sign-on settings" key={settings?.updated_at ?? 'none'}>
        <Field label="SSO name" name="slug" required pattern="[a-z0-9-]{3,40}" defaultValue={settings?.slug} />
        <Field label="Issuer URL" name="issuer_url" type="url" required defaultValue={settings?.issuer_url} />
        <Field label="Client id" name="client_id" required defaultValue={settings?.client_id} />
        <Field
          label={settings?.client_secret_set ? 'Client secret (set; enter it again to save)' : 'Client secret'}
          name="client_secret"
          type="password"
          required
          autoComplete="off"
        />
        <Field label="Allowed email domains (comma-separated)" name="allowed_email_domains" defaultValue={settings?.allowed_email_domains.join(', ')} />
        <label class="field">
          <span>Role of a user created at first sign-in</span>
          <select name="default_role" value={defaultRole} onChange={(event) => setDefaultRole(event.currentTarget.value as SsoSettings['default_role'])}>
            {SSO_ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
          </select>
        </label>
        <label class="check">
          <input type="checkbox" name="required" defaultChecked={settings?.required ?? false} /> Required: no password sign-in but owners' (break-glass)
        </label>
        <p><button type="submit">Save single sign-on</button></p>
      </form>
      {settings && (
        <ConfirmButton label="Remove single sign-on" question="Remove single sign-on?" yes="Yes, remove" no="Keep it" groupLabel="Confirm removing single sign-on" danger onConfirm={() => void remove()} />
      )}
      <Outcome error={error} done={done} />
    </>
  );
}
