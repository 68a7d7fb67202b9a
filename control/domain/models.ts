export type Provider = 'openai' | 'anthropic' | 'google';

export const DEFAULT_MODEL = 'gpt-4o';

/** The environment variable that carries each provider's key into the container. */
export const PROVIDER_KEY_VARIABLE: Readonly<Record<Provider, string>> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_API_KEY',
};

const MODEL_FAMILIES: ReadonlyArray<[RegExp, Provider]> = [
  [/^(gpt-|o1|o3|o4|chatgpt-)/, 'openai'],
  [/^claude-/, 'anthropic'],
  [/^gemini-/, 'google'],
];

/** The provider a model name belongs to, or null when no family matches it. */
export function providerOf(model: string): Provider | null {
  for (const [pattern, provider] of MODEL_FAMILIES) {
    if (pattern.test(model)) return provider;
  }
  return null;
}
