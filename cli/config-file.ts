import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CliError, EXIT } from './errors.js';

/** One API target: where it is and the session `auth login` (or `context add --token`) keeps for it. */
export interface StoredTarget {
  api_url?: string;
  token?: string;
  expires_at?: string;
  email?: string;
  /** The account `accounts use` selected: sent as X-Account-Id on every request; absent: the user's default account. */
  account_id?: string;
}

/** The config file: named targets (contexts) and the one in use, as `context use` sets it. */
export interface StoredConfig {
  current_context?: string;
  contexts: Record<string, StoredTarget>;
}

/** The context the single-target file of earlier versions becomes, and the one `auth login` fills when there is none. */
export const DEFAULT_CONTEXT = 'default';

/** The file's contents, or an empty config when there is none yet. */
export function readConfigFile(path: string): StoredConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} };
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // reported below, as for a JSON value that is not an object
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError(`${path} is not a JSON object: fix or delete it, then sign in again`, EXIT.usage);
  }
  return fromFile(parsed as Record<string, unknown>);
}

/**
 * A file with `contexts` as it is; the flat `{api_url, token, …}` earlier versions wrote
 * is read as the context `default`, and written back in the new shape by the next change.
 */
function fromFile(parsed: Record<string, unknown>): StoredConfig {
  const { contexts, current_context } = parsed;
  if (contexts !== null && typeof contexts === 'object' && !Array.isArray(contexts)) {
    return { current_context: typeof current_context === 'string' ? current_context : undefined, contexts: contexts as Record<string, StoredTarget> };
  }
  const { api_url, token, expires_at, email } = parsed as StoredTarget;
  const legacy = Object.fromEntries(Object.entries({ api_url, token, expires_at, email }).filter(([, value]) => value !== undefined));
  return Object.keys(legacy).length ? { current_context: DEFAULT_CONTEXT, contexts: { [DEFAULT_CONTEXT]: legacy } } : { contexts: {} };
}

/**
 * Writes the config readable by its owner only (0600, in a 0700 directory): it holds
 * session tokens. Written beside and renamed, so a crash never leaves half a file, and
 * chmod'ed because an existing directory keeps the mode it had.
 */
export function writeConfigFile(path: string, config: StoredConfig): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  chmodSync(dirname(path), 0o700);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

export function removeConfigFile(path: string): void {
  rmSync(path, { force: true });
}
