export interface ServerSentEvent {
  event: string;
  // Event payloads are JSON of several shapes; tests read the fields they know.
  data: any;
}

/** Posts to /invoke asking for an event stream and collects every event until the stream ends. */
export async function postInvokeStream(url: string, body: unknown): Promise<{ status: number; contentType: string | null; events: ServerSentEvent[]; raw: string }> {
  const response = await fetch(`${url}/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  const contentType = response.headers.get('content-type');
  const events = contentType?.startsWith('text/event-stream') ? parseEvents(raw) : [];
  return { status: response.status, contentType, events, raw };
}

export function parseEvents(raw: string): ServerSentEvent[] {
  return raw
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? 'message';
      const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
      return { event, data: JSON.parse(data) };
    });
}
