import { useState } from 'preact/hooks';
import { messageOf } from '../api.js';
import { Field } from '../field.js';
import { readEvents } from '../sse.js';
import type { Agent } from '../types.js';

/**
 * Calls the agent as its users do: POST /invoke on its URL, through the edge, with an access
 * key when it is private, and shows the runtime's streamed deltas as they arrive
 * (runtime-image/README.md, "Streaming": delta texts, then done or error).
 */
export function TryItTab({ agent }: { agent: Agent }) {
  const [answer, setAnswer] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const send = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const key = String(form.get('key') ?? '').trim();
    setAnswer('');
    setError('');
    setBusy(true);
    try {
      const response = await fetch(`${agent.url}/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ input: String(form.get('input') ?? '') }),
      });
      if (!response.ok || !response.body) throw new Error(await failureOf(response));
      // An image of the user's own may answer runtime contract v1's plain JSON ({output, …}) whatever Accept says.
      if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
        setAnswer(outputOf(await response.text()));
        return;
      }
      await readEvents(response.body, (item) => {
        const data = item.data as { text?: string; error?: { message?: string } };
        if (item.event === 'delta') setAnswer((before) => before + (data.text ?? ''));
        if (item.event === 'error') setError(data.error?.message ?? 'The agent failed');
      });
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={send}>
      <label class="field"><span>Input</span><textarea name="input" rows={3} required /></label>
      {agent.access === 'private' && <Field label="Access key" name="key" type="password" autoComplete="off" required />}
      <button type="submit" disabled={busy}>Send</button>
      {error && <p role="alert" class="error">{error}</p>}
      <output class="answer" aria-live="polite">{answer}</output>
    </form>
  );
}

/** The `output` of a JSON answer (SPEC: POST /invoke, 200 with `output`), else the body as it came. */
function outputOf(text: string): string {
  try {
    const body = JSON.parse(text);
    if (typeof body?.output === 'string') return body.output;
  } catch {
    // not JSON: show what the agent sent
  }
  return text;
}

/**
 * What the edge or the agent said when refusing: the edge's denials are plain text
 * (docs/contract.md, "Edge replies"), an agent's errors JSON (runtime-image/README.md).
 */
async function failureOf(response: Response): Promise<string> {
  const text = (await response.text().catch(() => '')).trim();
  let message = text;
  try {
    const body = JSON.parse(text);
    message = body.error?.message ?? body.message ?? text;
  } catch {
    // plain text: the edge's own words
  }
  return `The edge answered ${response.status}${message ? `: ${message}` : ''}`;
}
