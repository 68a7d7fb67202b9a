import { credentials } from './api.js';

export interface StreamEvent {
  event: string;
  data: unknown;
}

/**
 * Follows a server-sent event stream of /v1 with fetch, since EventSource cannot send the
 * Authorization header the API requires. Calls `onEvent` per event until `signal` aborts
 * or the server ends the stream; throws the API's message if the stream is refused.
 */
export async function followStream(path: string, onEvent: (event: StreamEvent) => void, signal: AbortSignal): Promise<void> {
  const response = await fetch(`/v1${path}`, { headers: { ...credentials(), accept: 'text/event-stream' }, signal });
  if (!response.ok || !response.body) {
    const body = await response.json().catch(() => ({}));
    throw new Error(body.message ?? `The stream answered ${response.status}`);
  }
  await readEvents(response.body, onEvent);
}

/** Calls `onEvent` for each event of a text/event-stream body until it ends. */
export async function readEvents(body: ReadableStream<Uint8Array>, onEvent: (event: StreamEvent) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream() as ReadableWritablePair<string, Uint8Array>).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = parseBlock(block);
      if (event) onEvent(event);
    }
  }
}

/** One event of the text/event-stream format; comment-only blocks (heartbeats) are none. */
function parseBlock(block: string): StreamEvent | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return undefined;
  return { event, data: JSON.parse(data.join('\n')) };
}
