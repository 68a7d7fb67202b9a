/** Examples of the invocations API (issue 38), shown in the OpenAPI document. */

export const invocation = {
  invocation_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  started_at: '2025-12-02T14:31:05.120Z',
  duration_ms: 2840.5,
  status: 'ok',
  session_id: 'conv-3f9a2c71',
  models: ['gpt-4o-2024-08-06'],
  input_tokens: 1830,
  output_tokens: 412,
  cost_usd: 0.008695,
  tool_calls: 1,
};

export const modelCallSpan = {
  span_id: '00f067aa0ba902b7',
  parent_span_id: 'a3ce929d0e0e4736',
  name: 'chat gpt-4o',
  kind: 3,
  start_time: '2025-12-02T14:31:05.180Z',
  end_time: '2025-12-02T14:31:06.410Z',
  duration_ms: 1230,
  status: 'unset',
  status_message: null,
  cost_usd: 0.004375,
  attributes: {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o',
    'gen_ai.response.model': 'gpt-4o-2024-08-06',
    'gen_ai.usage.input_tokens': 950,
    'gen_ai.usage.output_tokens': 200,
    'gen_ai.response.finish_reasons': ['tool_calls'],
  },
};
