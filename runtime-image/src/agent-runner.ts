import { generateText, stepCountIs, streamText, type ModelMessage, type ToolSet } from 'ai';
import { internalError } from './errors.js';
import type { ModelInstance } from './language-model.js';
import { traceModel } from './tracing/model-spans.js';
import type { InvokeTrace } from './tracing/spans.js';
import { traceTools } from './tracing/tool-spans.js';

export interface TurnRequest {
  history: readonly ModelMessage[];
  input: string;
  /** Given when the caller streams: receives the answer's text as it arrives. */
  onTextDelta?: (text: string) => void;
  /** The invoke's trace, when traced: each model call and tool call adds a span to it. */
  trace?: InvokeTrace;
}

export interface TurnResult {
  /** The final answer only, never text of the tool-calling steps before it. */
  output: string;
  /** The turn to keep in history: the user's message and every message the model and tools added. */
  messages: ModelMessage[];
}

export interface AgentRunnerOptions {
  model: ModelInstance;
  systemPrompt: string;
  temperature: number | undefined;
  tools: ToolSet;
  maxToolSteps: number;
  maxRetries: number;
}

export interface AgentRunner {
  runTurn(request: TurnRequest): Promise<TurnResult>;
}

/** Runs one conversation turn: the model, then tools and the model again, until it answers. */
export function createAgentRunner(options: AgentRunnerOptions): AgentRunner {
  const callSettings = (request: TurnRequest, userMessage: ModelMessage) => ({
    model: request.trace ? traceModel(options.model, request.trace) : options.model,
    system: options.systemPrompt,
    messages: [...request.history, userMessage],
    tools: request.trace ? traceTools(options.tools, request.trace) : options.tools,
    stopWhen: stepCountIs(options.maxToolSteps),
    maxRetries: options.maxRetries,
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
  });

  return {
    async runTurn(request) {
      const userMessage: ModelMessage = { role: 'user', content: request.input };
      const settings = callSettings(request, userMessage);
      const { text, finishReason, messages } = request.onTextDelta
        ? await streamTurn(settings, request.onTextDelta)
        : await generateTurn(settings);
      if (finishReason === 'tool-calls') {
        throw internalError(`the agent used all ${options.maxToolSteps} model calls on tools without answering (RUNTIME_MAX_TOOL_STEPS)`);
      }
      return { output: text, messages: [userMessage, ...messages] };
    },
  };
}

type CallSettings = Parameters<typeof generateText<ToolSet>>[0];

interface TurnOutcome {
  text: string;
  finishReason: string;
  messages: ModelMessage[];
}

async function generateTurn(settings: CallSettings): Promise<TurnOutcome> {
  const result = await generateText(settings);
  return { text: result.text, finishReason: result.finishReason, messages: result.response.messages };
}

async function streamTurn(settings: CallSettings, onTextDelta: (text: string) => void): Promise<TurnOutcome> {
  // Failures arrive as error parts below; the default onError would also print them.
  const result = streamText({ ...settings, onError: () => {} });
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') onTextDelta(part.text);
    // The SDK reports stream failures as parts rather than rejections.
    if (part.type === 'error') throw part.error;
  }
  const [text, finishReason, response] = await Promise.all([result.text, result.finishReason, result.response]);
  return { text, finishReason, messages: response.messages };
}
