import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import type { Provider } from './providers.js';

export type Fetch = typeof globalThis.fetch;

/** A model object rather than a model id: what the provider packages build, and what middleware can wrap. */
export type ModelInstance = Exclude<LanguageModel, string>;

export interface ModelTarget {
  provider: Provider;
  model: string;
  apiKey: string;
  /** Undefined keeps the provider package's public endpoint. */
  baseUrl: string | undefined;
}

/**
 * Builds the `ai` SDK model for the agent. Every HTTP request it makes goes
 * through `fetch` with a deadline of `timeoutMs`, so one slow provider call
 * cannot hold an invoke forever.
 */
export function createLanguageModel(target: ModelTarget, options: { fetch: Fetch; timeoutMs: number }): ModelInstance {
  const settings = {
    apiKey: target.apiKey,
    baseURL: target.baseUrl,
    fetch: withDeadline(options.fetch, options.timeoutMs),
  };
  switch (target.provider) {
    case 'openai':
      // Chat Completions rather than the Responses API: every OpenAI-compatible
      // server that OPENAI_BASE_URL may point at speaks it.
      return createOpenAI(settings).chat(target.model);
    case 'anthropic':
      return createAnthropic(settings)(target.model);
    case 'google':
      return createGoogleGenerativeAI(settings)(target.model);
  }
}

function withDeadline(fetch: Fetch, timeoutMs: number): Fetch {
  return (input, init) => {
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    return fetch(input, { ...init, signal });
  };
}
