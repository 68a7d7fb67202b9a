import { DEFAULT_CONTEXT, type StoredConfig, type StoredTarget } from './config-file.js';

/** Pure changes to the config file's contexts; the commands read, change and write it back. */

/**
 * `name` signed in to `apiUrl`: its target gets the API and the session; it becomes current when
 * none is. A new session starts in the user's default account: the one `accounts use` chose may not be theirs.
 */
export function withSession(config: StoredConfig, name: string, target: Required<Pick<StoredTarget, 'api_url' | 'token'>> & StoredTarget): StoredConfig {
  const { account_id: _previous, ...kept } = config.contexts[name] ?? {};
  return { current_context: config.current_context ?? name, contexts: { ...config.contexts, [name]: { ...kept, ...target } } };
}

/**
 * `name` signed out: a context `context add` made keeps its API and loses the session; the
 * `default` one, which `auth login` fills by itself, goes entirely. Undefined when no context is
 * left, so that the single-target user's logout still removes the file.
 */
export function withoutSession(config: StoredConfig, name: string): StoredConfig | undefined {
  const { [name]: target, ...others } = config.contexts;
  const contexts = name === DEFAULT_CONTEXT || !target?.api_url ? others : { ...others, [name]: { api_url: target.api_url } };
  if (Object.keys(contexts).length === 0) return undefined;
  return { current_context: config.current_context, contexts };
}

/** `name` added, or replaced when it exists; the first context added becomes current. */
export function withContext(config: StoredConfig, name: string, target: StoredTarget): StoredConfig {
  return { current_context: config.current_context ?? name, contexts: { ...config.contexts, [name]: target } };
}

export function withCurrent(config: StoredConfig, name: string): StoredConfig {
  return { ...config, current_context: name };
}

export function withoutContext(config: StoredConfig, name: string): StoredConfig {
  const { [name]: _removed, ...contexts } = config.contexts;
  return { current_context: config.current_context === name ? undefined : config.current_context, contexts };
}

/** `name` acting in `accountId` from now on (`accounts use`); its session and API stay. */
export function withAccount(config: StoredConfig, name: string, accountId: string): StoredConfig {
  return { ...config, contexts: { ...config.contexts, [name]: { ...config.contexts[name], account_id: accountId } } };
}
