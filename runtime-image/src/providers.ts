export const PROVIDERS = ['openai', 'anthropic', 'google'] as const;
export type Provider = (typeof PROVIDERS)[number];

export function isProvider(value: string): value is Provider {
  return (PROVIDERS as readonly string[]).includes(value);
}

/** The variable the platform puts the agent's model key in, per provider (docs/contract.md, "What the platform gives a container"). */
export const KEY_VARIABLE: Readonly<Record<Provider, string>> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_API_KEY',
};

const DISPLAY_NAME: Readonly<Record<Provider, string>> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  google: 'Google',
};

/** Model name prefixes the platform uses to derive LLM_PROVIDER; the runtime derives it the same way. */
const MODEL_PREFIXES: ReadonlyArray<readonly [string, Provider]> = [
  ['gpt-', 'openai'],
  ['o1', 'openai'],
  ['o3', 'openai'],
  ['o4', 'openai'],
  ['chatgpt-', 'openai'],
  ['claude-', 'anthropic'],
  ['gemini-', 'google'],
];

export function providerForModel(model: string): Provider | undefined {
  return MODEL_PREFIXES.find(([prefix]) => model.startsWith(prefix))?.[1];
}

/**
 * Recognises a key by the prefix each provider issues. Only recognisable keys
 * are attributed: an OpenAI-compatible server behind OPENAI_BASE_URL may
 * accept keys of any shape, so an unknown shape is never called wrong.
 */
export function providerOwningKey(key: string): Provider | undefined {
  if (key.startsWith('sk-ant-')) return 'anthropic';
  if (key.startsWith('AIza')) return 'google';
  if (key.startsWith('sk-')) return 'openai';
  return undefined;
}

/** Why the key given for `provider` cannot be used, or undefined when it can. */
export function keyProblem(provider: Provider, key: string | undefined): string | undefined {
  const variable = KEY_VARIABLE[provider];
  if (key === undefined || key.trim() === '') {
    return `model key missing: ${variable} is not set (the ${DISPLAY_NAME[provider]} model needs it)`;
  }
  const owner = providerOwningKey(key);
  if (owner !== undefined && owner !== provider) {
    return `model key for the wrong provider: ${variable} holds ${article(DISPLAY_NAME[owner])} key, the model needs ${article(DISPLAY_NAME[provider])} key`;
  }
  return undefined;
}

function article(name: string): string {
  return /^[AEIOU]/.test(name) ? `an ${name}` : `a ${name}`;
}

export function displayName(provider: Provider): string {
  return DISPLAY_NAME[provider];
}
