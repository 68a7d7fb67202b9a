import { useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { AutoScaleBounds, autoScaleInput, ParkNote } from '../auto-scale-fields.js';
import { Field } from '../field.js';
import { navigate } from '../router.js';
import type { Agent } from '../types.js';

interface EnvRow {
  key: string;
  value: string;
  secret: boolean;
}

/** Creates an agent and deploys it at once (a create with `deploy`), then opens its page. */
export function NewAgentPage() {
  const [env, setEnv] = useState<EnvRow[]>([]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [autoScale, setAutoScale] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    const optional = (name: string) => (text(name) ? text(name) : undefined);
    const number = (name: string) => (text(name) ? Number(text(name)) : undefined);
    const body = {
      name: text('name'),
      model: optional('model'),
      api_key: optional('api_key'),
      system_prompt: optional('system_prompt'),
      access: text('access'),
      tags: text('tags') ? text('tags').split(',').map((tag) => tag.trim()).filter(Boolean) : undefined,
      deploy: {
        image: optional('image'),
        port: number('port'),
        replicas: number('replicas'),
        resources: { cpu: number('cpu'), memory_mb: number('memory_mb') },
        env: env.filter((row) => row.key),
        ...(autoScale ? autoScaleInput(form) : {}),
      },
    };
    setBusy(true);
    setError('');
    try {
      const agent = await api<Agent>('POST', '/agents', body);
      navigate(`/agents/${agent.id}`);
    } catch (caught) {
      setError(messageOf(caught));
      setBusy(false);
    }
  };

  const change = (index: number, patch: Partial<EnvRow>) => setEnv(env.map((row, at) => (at === index ? { ...row, ...patch } : row)));

  return (
    <section class="narrow">
      <h1>New agent</h1>
      <form onSubmit={submit}>
        <Field label="Name" name="name" required maxLength={128} />
        <Field label="Model" name="model" placeholder="platform default" />
        <Field label="API key" name="api_key" type="password" autoComplete="off" />
        <label class="field"><span>System prompt</span><textarea name="system_prompt" rows={3} /></label>
        <label class="field">
          <span>Access</span>
          <select name="access"><option value="public">public</option><option value="private">private</option></select>
        </label>
        <Field label="Image" name="image" placeholder="the platform runtime" />
        <Field label="Port" name="port" type="number" min={1} max={65535} />
        <Field label="Replicas" name="replicas" type="number" min={0} max={100} defaultValue="1" />
        <Field label="CPU" name="cpu" type="number" step="0.1" min={0.1} placeholder="vCPUs" />
        <Field label="Memory (MiB)" name="memory_mb" type="number" min={64} />
        <Field label="Tags" name="tags" placeholder="comma separated" />
        <fieldset>
          <legend>Auto-scaling</legend>
          <label class="check">
            <input type="checkbox" name="auto_scale" checked={autoScale} onChange={(event) => setAutoScale(event.currentTarget.checked)} /> Auto-scale
          </label>
          {autoScale && <><AutoScaleBounds saved={{ min_replicas: 1, max_replicas: 3 }} /><ParkNote /></>}
        </fieldset>
        <fieldset>
          <legend>Environment</legend>
          {env.map((row, index) => (
            <div class="env-row" key={index}>
              <Field label={`Name ${index + 1}`} value={row.key} onInput={(event) => change(index, { key: event.currentTarget.value })} />
              {row.secret
                ? <Field label={`Value ${index + 1}`} value={row.value} type="password" onInput={(event) => change(index, { value: event.currentTarget.value })} />
                : <Field label={`Value ${index + 1}`} value={row.value} onInput={(event) => change(index, { value: event.currentTarget.value })} />}
              <label class="check"><input type="checkbox" checked={row.secret} onChange={(event) => change(index, { secret: event.currentTarget.checked })} /> Secret</label>
              <button type="button" aria-label={`Remove variable ${index + 1}`} onClick={() => setEnv(env.filter((_, at) => at !== index))}>Remove</button>
            </div>
          ))}
          <button type="button" onClick={() => setEnv([...env, { key: '', value: '', secret: false }])}>Add variable</button>
        </fieldset>
        {error && <p role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy}>Create and deploy</button>
      </form>
    </section>
  );
}
