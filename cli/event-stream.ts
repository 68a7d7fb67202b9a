/** One server-sent event: its `event:` name (default "message"), `data:` text and `id:`. */
export interface ServerEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * Splits a text/event-stream body into events as the HTML standard's parser does
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html, "Interpreting an event
 * stream"): lines end in CR, LF or CRLF; `:` lines are comments; data lines join with LF;
 * a blank line dispatches; an event without data is dropped.
 */
export async function* readEvents(body: AsyncIterable<Uint8Array | string>): AsyncIterable<ServerEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let end: RegExpExecArray | null;
    // A lone CR at the buffer's end may be half of a CRLF: wait for the next chunk.
    while ((end = /\r\n|\n|\r(?!$)/.exec(buffer))) {
      const line = buffer.slice(0, end.index);
      buffer = buffer.slice(end.index + end[0].length);
      if (line === '') {
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), id };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  }
}
