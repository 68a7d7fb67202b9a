/**
 * The bodies each provider's public API sends, as documented by the provider:
 * a whole message, the server-sent events of a streamed one, and an error.
 */
export interface Answer {
  text: string;
  toolCalls: Array<{ name: string; args: Record<string, unknown> }>;
}

export interface WireFormat {
  message(answer: Answer, model: string): unknown;
  events(answer: Answer, model: string): string[];
  error(status: number): unknown;
}

let sequence = 0;
const nextId = (prefix: string) => `${prefix}${++sequence}`;

/** Splits text in a few pieces so that streaming shows several deltas. */
export function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** OpenAI Chat Completions: POST /v1/chat/completions. */
export const formatOpenAi: WireFormat = {
  message(answer, model) {
    const toolCalls = answer.toolCalls.map((call) => ({
      id: nextId('call_'),
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.args) },
    }));
    return {
      id: nextId('chatcmpl-'),
      object: 'chat.completion',
      created: 1_700_000_000,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: answer.text || null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
          logprobs: null,
          finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    };
  },
  events(answer, model) {
    const id = nextId('chatcmpl-');
    const chunk = (delta: unknown, finishReason: string | null = null) =>
      sse({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finishReason }] });
    const events = [chunk({ role: 'assistant', content: '' })];
    for (const piece of pieces(answer.text)) events.push(chunk({ content: piece }));
    answer.toolCalls.forEach((call, index) => {
      events.push(chunk({ tool_calls: [{ index, id: nextId('call_'), type: 'function', function: { name: call.name, arguments: '' } }] }));
      events.push(chunk({ tool_calls: [{ index, function: { arguments: JSON.stringify(call.args) } }] }));
    });
    events.push(chunk({}, answer.toolCalls.length ? 'tool_calls' : 'stop'));
    events.push(sse({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
    events.push('data: [DONE]\n\n');
    return events;
  },
  error(status) {
    const type = status === 401 ? 'invalid_request_error' : status === 429 ? 'requests' : 'server_error';
    const message = status === 401 ? 'Incorrect API key provided: sk-fake***key.' : `fake failure ${status}`;
    return { error: { message, type, param: null, code: status === 401 ? 'invalid_api_key' : null } };
  },
};

/** Anthropic Messages: POST /v1/messages. */
export const formatAnthropic: WireFormat = {
  message(answer, model) {
    const content = [
      ...(answer.text ? [{ type: 'text', text: answer.text }] : []),
      ...answer.toolCalls.map((call) => ({ type: 'tool_use', id: nextId('toolu_'), name: call.name, input: call.args })),
    ];
    return {
      id: nextId('msg_'),
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: answer.toolCalls.length ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5 },
    };
  },
  events(answer, model) {
    const events = [
      sse({ type: 'message_start', message: { id: nextId('msg_'), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }, 'message_start'),
    ];
    let index = 0;
    if (answer.text) {
      events.push(sse({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, 'content_block_start'));
      for (const piece of pieces(answer.text)) {
        events.push(sse({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }, 'content_block_delta'));
      }
      events.push(sse({ type: 'content_block_stop', index }, 'content_block_stop'));
      index++;
    }
    for (const call of answer.toolCalls) {
      events.push(sse({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: nextId('toolu_'), name: call.name, input: {} } }, 'content_block_start'));
      events.push(sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.args) } }, 'content_block_delta'));
      events.push(sse({ type: 'content_block_stop', index }, 'content_block_stop'));
      index++;
    }
    const stopReason = answer.toolCalls.length ? 'tool_use' : 'end_turn';
    events.push(sse({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } }, 'message_delta'));
    events.push(sse({ type: 'message_stop' }, 'message_stop'));
    return events;
  },
  error(status) {
    const type = status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : 'api_error';
    return { type: 'error', error: { type, message: status === 401 ? 'invalid x-api-key' : `fake failure ${status}` } };
  },
};

/** Gemini: POST /v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse. */
export const formatGoogle: WireFormat = {
  message(answer) {
    return {
      candidates: [{ content: { role: 'model', parts: googleParts(answer) }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    };
  },
  events(answer) {
    const events = pieces(answer.text).map((piece) =>
      sse({ candidates: [{ content: { role: 'model', parts: [{ text: piece }] }, index: 0 }] }),
    );
    const calls = answer.toolCalls.map((call) => ({ functionCall: { name: call.name, args: call.args } }));
    events.push(
      sse({
        candidates: [{ content: { role: 'model', parts: calls.length ? calls : [{ text: '' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
      }),
    );
    return events;
  },
  error(status) {
    const statusName = status === 401 ? 'UNAUTHENTICATED' : status === 429 ? 'RESOURCE_EXHAUSTED' : 'INTERNAL';
    return { error: { code: status, message: `fake failure ${status}`, status: statusName } };
  },
};

function googleParts(answer: Answer): unknown[] {
  return [
    ...(answer.text ? [{ text: answer.text }] : []),
    ...answer.toolCalls.map((call) => ({ functionCall: { name: call.name, args: call.args } })),
  ];
}
