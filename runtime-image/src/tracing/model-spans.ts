import { wrapLanguageModel, type LanguageModelMiddleware } from 'ai';
import type { ModelInstance } from '../language-model.js';
import { finishReasonName, inputMessages, outputMessages, type CallOptions, type GenerateResult } from './gen-ai-messages.js';
import { SPAN_KIND, type ActiveSpan, type InvokeTrace } from './spans.js';

type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer T> ? T : never;
type Usage = GenerateResult['usage'];

/**
 * The model, recording a `chat <model>` span under the invoke's root for every call the SDK
 * makes to it (each step of the tool loop, each retry). Wrapping doGenerate/doStream is the
 * one place that sees exactly one provider request with its own start and end.
 */
export function traceModel(model: ModelInstance, trace: InvokeTrace): ModelInstance {
  const start = (params: CallOptions) => {
    const span = trace.startChild(`chat ${model.modelId}`, SPAN_KIND.CLIENT, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': model.modelId,
    });
    span.set('gen_ai.provider.name', trace.providerName);
    span.set('gen_ai.request.temperature', params.temperature);
    if (trace.recordContent) {
      const messages = inputMessages(params.prompt);
      span.set('gen_ai.system_instructions', messages.system).set('gen_ai.input.messages', messages.input);
    }
    return span;
  };

  const middleware: LanguageModelMiddleware = {
    middlewareVersion: 'v2',
    async wrapGenerate({ doGenerate, params }) {
      const span = start(params);
      try {
        const result = await doGenerate();
        recordAnswer(span, result.response?.modelId, result.usage, result.finishReason);
        if (trace.recordContent) span.set('gen_ai.output.messages', outputMessages(result.content, finishReasonName(result.finishReason)));
        span.end();
        return result;
      } catch (error) {
        span.fail(modelErrorType(error));
        throw error;
      }
    },
    async wrapStream({ doStream, params }) {
      const span = start(params);
      let result: StreamResult;
      try {
        result = await doStream();
      } catch (error) {
        span.fail(modelErrorType(error));
        throw error;
      }
      return { ...result, stream: result.stream.pipeThrough(observeStream(span, trace.recordContent)) };
    },
  };
  return wrapLanguageModel({ model, middleware });
}

/** Passes the stream through unchanged, ending the span with what its parts said. */
function observeStream(span: ActiveSpan, recordContent: boolean): TransformStream<StreamPart, StreamPart> {
  let responseModel: string | undefined;
  let failure: unknown;
  let finish: { usage: Usage; finishReason: string } | undefined;
  const texts = new Map<string, { type: 'text' | 'reasoning'; text: string }>();
  const toolCalls: Array<Extract<StreamPart, { type: 'tool-call' }>> = [];
  // `cancel` (WHATWG Streams, in Node since 21) is not in this TypeScript lib's Transformer yet.
  const transformer: Transformer<StreamPart, StreamPart> & { cancel(): void } = {
    transform(part, controller) {
      controller.enqueue(part);
      if (part.type === 'response-metadata') responseModel = part.modelId ?? responseModel;
      else if (part.type === 'finish') finish = { usage: part.usage, finishReason: part.finishReason };
      else if (part.type === 'error') failure ??= part.error;
      else if (recordContent) {
        if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
          const kind = part.type === 'text-delta' ? 'text' : 'reasoning';
          const entry = texts.get(`${kind}:${part.id}`) ?? { type: kind, text: '' };
          entry.text += part.delta;
          texts.set(`${kind}:${part.id}`, entry);
        } else if (part.type === 'tool-call') toolCalls.push(part);
      }
    },
    flush() {
      if (failure !== undefined) {
        span.fail(modelErrorType(failure));
        return;
      }
      recordAnswer(span, responseModel, finish?.usage, finish?.finishReason);
      if (recordContent) {
        const content = [...[...texts.values()].map((entry) => ({ ...entry })), ...toolCalls];
        span.set('gen_ai.output.messages', outputMessages(content, finishReasonName(finish?.finishReason ?? 'unknown')));
      }
      span.end();
    },
    // A reader that gives up (the invoke failed elsewhere) still ends the span.
    cancel() {
      span.fail('cancelled');
    },
  };
  return new TransformStream(transformer);
}

function recordAnswer(span: ActiveSpan, responseModel: string | undefined, usage: Usage | undefined, finishReason: string | undefined): void {
  span.set('gen_ai.response.model', responseModel);
  span.set('gen_ai.usage.input_tokens', usage?.inputTokens);
  span.set('gen_ai.usage.output_tokens', usage?.outputTokens);
  if (finishReason !== undefined) span.set('gen_ai.response.finish_reasons', [finishReasonName(finishReason)]);
}

/** The provider's HTTP status when it answered one, else the error's class: low-cardinality, and no provider text. */
function modelErrorType(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'statusCode' in error && typeof error.statusCode === 'number') return String(error.statusCode);
  if (error instanceof Error) return error.name === 'Error' ? '_OTHER' : error.name;
  return '_OTHER';
}
