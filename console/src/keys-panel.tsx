import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from './api.js';
import { CopyButton } from './copy-button.js';
import { Field } from './field.js';
import type { AccessKey, AccessKeyCreated } from './types.js';

/**
 * Create (the secret shown once, with copy), list and revoke keys under `path`: an agent's
 * access keys and the personal API keys work alike; `listField` names the list in the answer.
 */
export function KeysPanel({ path, listField, noun }: { path: string; listField: string; noun: string }) {
  const [keys, setKeys] = useState<AccessKey[]>([]);
  const [created, setCreated] = useState<AccessKeyCreated | null>(null);
  const [error, setError] = useState('');

  const load = () => api<Record<string, AccessKey[]>>('GET', path).then((answer) => setKeys(answer[listField] ?? []), (caught) => setError(messageOf(caught)));
  useEffect(() => { void load(); }, [path]);

  const act = async (work: () => Promise<void>) => {
    setError('');
    try {
      await work();
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  const create = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const label = String(new FormData(form).get('label') ?? '').trim();
    void act(async () => { setCreated(await api<AccessKeyCreated>('POST', path, { label })); form.reset(); });
  };

  return (
    <div>
      <form class="inline" onSubmit={create}>
        <Field label="Label" name="label" required maxLength={128} />
        <button type="submit">Create {noun}</button>
      </form>
      {created && (
        <div class="once" role="status">
          <p>The new key {created.label}; it is shown only now:</p>
          <code class="secret">{created.key}</code> <CopyButton text={created.key} label={`Copy the new ${noun}`} />
          <button type="button" onClick={() => setCreated(null)}>Done</button>
        </div>
      )}
      {error && <p role="alert" class="error">{error}</p>}
      {keys.length === 0 ? <p>No {noun}s.</p> : (
        <ul class="keys" aria-label={`${noun}s`}>
          {keys.map((key) => (
            <li key={key.id}>
              <span class="label">{key.label}</span> <code>{key.key_preview}</code> <time dateTime={key.created_at}>{new Date(key.created_at).toLocaleDateString()}</time>{' '}
              <button type="button" aria-label={`Revoke ${key.label}`} onClick={() => act(() => api('DELETE', `${path}/${key.id}`))}>Revoke</button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
