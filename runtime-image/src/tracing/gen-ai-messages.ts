import type { LanguageModelMiddleware } from 'ai';

// The SDK's model-call types, reached through `ai` (the runtime's dependency) rather than @ai-sdk/provider.
type WrapGenerate = NonNullable<LanguageModelMiddleware['wrapGenerate']>;
export type CallOptions = Parameters<WrapGenerate>[0]['params'];
export type GenerateResult = Awaited<ReturnType<WrapGenerate>>;
type PromptMessage = CallOptions['prompt'][number];
type OutputContent = GenerateResult['content'][number];

/** A message part as the GenAI semantic conventions' gen_ai.input.messages / output.messages schemas give it. */
type Part =
  | { type: 'text'; content: string }
  | { type: 'reasoning'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: unknown }
  | { type: 'file'; mime_type: string };

export interface GenAiMessages {
  /** gen_ai.system_instructions, when the prompt has a system message. */
  system: string | undefined;
  /** gen_ai.input.messages. */
  input: string;
}

/** The prompt of one model call, as the semantic conventions' JSON (recorded only with TRACE_CONTENT). */
export function inputMessages(prompt: CallOptions['prompt']): GenAiMessages {
  const system = prompt.flatMap((message) => (message.role === 'system' ? [{ type: 'text', content: message.content }] : []));
  const messages = prompt.filter((message) => message.role !== 'system').map((message) => ({ role: message.role, parts: promptParts(message) }));
  return { system: system.length > 0 ? JSON.stringify(system) : undefined, input: JSON.stringify(messages) };
}

/** What one model call answered, as gen_ai.output.messages. */
export function outputMessages(content: readonly OutputContent[], finishReason: string): string {
  const parts = content.flatMap((part): Part[] => {
    switch (part.type) {
      case 'text':
        return [{ type: 'text', content: part.text }];
      case 'reasoning':
        return [{ type: 'reasoning', content: part.text }];
      case 'tool-call':
        return [{ type: 'tool_call', id: part.toolCallId, name: part.toolName, arguments: parseJson(part.input) }];
      default:
        return [];
    }
  });
  return JSON.stringify([{ role: 'assistant', parts, finish_reason: finishReason }]);
}

/** The SDK's finish reason in the conventions' spelling (`tool-calls` → `tool_calls`). */
export function finishReasonName(reason: string): string {
  return reason.replace(/-/g, '_');
}

function promptParts(message: PromptMessage): Part[] {
  if (message.role === 'system') return [{ type: 'text', content: message.content }];
  return message.content.map((part): Part => {
    switch (part.type) {
      case 'text':
        return { type: 'text', content: part.text };
      case 'reasoning':
        return { type: 'reasoning', content: part.text };
      case 'file':
        return { type: 'file', mime_type: part.mediaType };
      case 'tool-call':
        return { type: 'tool_call', id: part.toolCallId, name: part.toolName, arguments: part.input };
      case 'tool-result':
        return { type: 'tool_call_response', id: part.toolCallId, response: part.output.value };
    }
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
