/**
 * USD per million tokens of one model, input and output. An invocation's estimated cost
 * is, for each of its model calls, input_tokens × input + output_tokens × output.
 */
export interface ModelPrice {
  input: number;
  output: number;
}

/** Prices by provider (`gen_ai.provider.name`: openai, anthropic, gcp.gemini) and then model. */
export type PriceTable = Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>;

/**
 * DEFAULTS TO OVERRIDE: the providers' published list prices (standard tier, the shortest
 * context band, no caching or batch discounts) for the models the default runtime is
 * commonly run with, as of late 2025. Prices change and contracts differ: an operator
 * whose figures must be exact gives their own table in MODEL_PRICES_FILE, which replaces
 * this one provider by provider.
 */
export const DEFAULT_MODEL_PRICES: PriceTable = {
  openai: {
    'gpt-4o': { input: 2.5, output: 10 },
    'gpt-4o-mini': { input: 0.15, output: 0.6 },
    'gpt-4.1': { input: 2, output: 8 },
    'gpt-4.1-mini': { input: 0.4, output: 1.6 },
    'gpt-4.1-nano': { input: 0.1, output: 0.4 },
    'o3-mini': { input: 1.1, output: 4.4 },
  },
  anthropic: {
    'claude-opus-4': { input: 15, output: 75 },
    'claude-sonnet-4': { input: 3, output: 15 },
    'claude-3-7-sonnet': { input: 3, output: 15 },
    'claude-3-5-sonnet': { input: 3, output: 15 },
    'claude-3-5-haiku': { input: 0.8, output: 4 },
    'claude-3-haiku': { input: 0.25, output: 1.25 },
  },
  'gcp.gemini': {
    'gemini-2.5-pro': { input: 1.25, output: 10 },
    'gemini-2.5-flash': { input: 0.3, output: 2.5 },
    'gemini-2.0-flash': { input: 0.1, output: 0.4 },
    'gemini-1.5-pro': { input: 1.25, output: 5 },
    'gemini-1.5-flash': { input: 0.075, output: 0.3 },
  },
};

/**
 * The price of `model`, or undefined when the table has none: never a guess. A model named
 * with a version suffix, as providers answer (`gpt-4o-2024-08-06`, `claude-3-5-haiku-20241022`),
 * takes the price of the longest entry it begins with followed by `-`.
 */
export function priceOf(table: PriceTable, provider: string | null, model: string | null): ModelPrice | undefined {
  if (!provider || !model) return undefined;
  const models = table[provider];
  if (!models) return undefined;
  if (Object.hasOwn(models, model)) return models[model];
  const family = Object.keys(models)
    .filter((name) => model.startsWith(`${name}-`))
    .sort((a, b) => b.length - a.length)[0];
  return family === undefined ? undefined : models[family];
}

/** Estimated USD of one model call; null when its price or its token counts are unknown, as 0 would read as free. */
export function costOf(price: ModelPrice | undefined, inputTokens: number | null, outputTokens: number | null): number | null {
  if (!price || inputTokens === null || outputTokens === null) return null;
  return (inputTokens * price.input + outputTokens * price.output) / 1_000_000;
}
