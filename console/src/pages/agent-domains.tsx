import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { CopyButton } from '../copy-button.js';
import { Field } from '../field.js';
import type { Domain, DomainList } from '../types.js';

/** While a domain moves (verification, issuing), its status is read again this often. */
const POLL_MS = 3000;
const SETTLED: readonly Domain['status'][] = ['active', 'failed'];

const STATUS_TEXT: Record<Domain['status'], string> = {
  pending_verification: 'waiting for the TXT record',
  verifying: 'checking the TXT record',
  issuing: 'ordering the certificate',
  active: 'active',
  failed: 'failed',
};

/** The agent's custom domains: add one, create its TXT record (copy buttons), watch its status move, delete. */
export function DomainsTab({ agentId }: { agentId: string }) {
  const path = `/agents/${agentId}/domains`;
  const [domains, setDomains] = useState<Domain[] | null>(null);
  const [error, setError] = useState('');

  const load = () => api<DomainList>('GET', path).then((answer) => setDomains(answer.domains), (caught) => setError(messageOf(caught)));
  useEffect(() => { void load(); }, [path]);
  // Polls only while something is still moving: a settled list is not read again.
  const moving = (domains ?? []).some((domain) => !SETTLED.includes(domain.status));
  useEffect(() => {
    if (!moving) return;
    const timer = setInterval(load, POLL_MS);
    return () => clearInterval(timer);
  }, [path, moving]);

  const act = async (work: () => Promise<unknown>) => {
    setError('');
    try {
      await work();
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  const add = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const hostname = String(new FormData(form).get('hostname') ?? '').trim();
    void act(async () => { await api<Domain>('POST', path, { hostname }); form.reset(); });
  };

  return (
    <div>
      <form class="inline" onSubmit={add}>
        <Field label="Hostname" name="hostname" required maxLength={253} placeholder="app.example.com" />
        <button type="submit">Add domain</button>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
      {domains === null ? <p>Loading…</p> : domains.length === 0 ? <p>No custom domains.</p> : (
        <ul class="domains" aria-label="Custom domains">
          {domains.map((domain) => (
            <li key={domain.id} aria-label={domain.hostname}>
              <p>
                <strong>{domain.hostname}</strong> <span class={`status status-${domain.status}`}>{STATUS_TEXT[domain.status]}</span>
                {domain.certificate && <> · certificate until <time dateTime={domain.certificate.not_after}>{new Date(domain.certificate.not_after).toLocaleDateString()}</time></>}{' '}
                <button type="button" aria-label={`Delete ${domain.hostname}`} onClick={() => act(() => api('DELETE', `${path}/${domain.id}`))}>Delete</button>
              </p>
              {domain.reason && <p class="error">{domain.reason}</p>}
              {domain.status !== 'active' && <TxtRecord domain={domain} onCheck={() => act(() => api('POST', `${path}/${domain.id}/verify`))} />}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The record to create at the DNS provider, each part with its copy button. */
function TxtRecord({ domain, onCheck }: { domain: Domain; onCheck: () => void }) {
  const { name, value } = domain.verification;
  return (
    <dl class="txt-record">
      <dt>TXT record name</dt>
      <dd><code>{name}</code> <CopyButton text={name} label={`Copy the TXT record name of ${domain.hostname}`} /></dd>
      <dt>TXT record value</dt>
      <dd><code>{value}</code> <CopyButton text={value} label={`Copy the TXT record value of ${domain.hostname}`} /></dd>
      <dd><button type="button" onClick={onCheck}>Check now</button></dd>
    </dl>
  );
}
