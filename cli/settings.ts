import { homedir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONTEXT, readConfigFile, type StoredConfig } from './config-file.js';
import { UsageError } from './errors.js';

export const DEFAULT_API_URL = 'http://127.0.0.1:7070/v1';

/** Everything agentctl reads from its environment and config file, read once at start. */
export interface Settings {
  /** The control API's base URL, /v1 included, without a trailing slash. */
  readonly apiUrl: string;
  readonly token: string | undefined;
  /** The account requests act in (X-Account-Id), as `accounts use` stored it with the context's session. */
  readonly accountId: string | undefined;
  /** An agent's access key for `agents invoke`, when --key is not given. */
  readonly accessKey: string | undefined;
  /** Where `agents invoke` connects instead of the agent URL's host (the agent's hostname goes in Host). */
  readonly edgeUrl: string | undefined;
  /** The context (named API target of the config file) this run uses. */
  readonly contextName: string;
  /** The user's shell by name (`bash` for /bin/bash), for `completion` without one named. */
  readonly shell: string | undefined;
  /** Whether output may carry ANSI colour. */
  readonly colour: boolean;
  readonly configPath: string;
  readonly stored: StoredConfig;
}

/** The global flags settings depend on. */
export interface SettingFlags {
  api?: string | undefined;
  edge?: string | undefined;
  context?: string | undefined;
  /** false for --no-color. */
  color?: boolean | undefined;
}

/** The environment agentctl was started with, as cli/main.ts hands it down. */
export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Precedence, highest first: the flag, the environment, the context's entry in the config
 * file, the default. The only reader of the environment in cli/.
 */
export function loadSettings(flags: SettingFlags, env: Environment, stdoutIsTty: boolean): Settings {
  const configPath = configPathOf(env);
  const stored = readConfigFile(configPath);
  const contextName = flags.context ?? (env.AGENTCTL_CONTEXT || undefined) ?? stored.current_context ?? DEFAULT_CONTEXT;
  const target = stored.contexts[contextName];
  // A context asked for by name must exist; the default one may be empty (nobody signed in yet).
  if (!target && contextName !== (stored.current_context ?? DEFAULT_CONTEXT)) {
    const known = Object.keys(stored.contexts);
    throw new UsageError(`no context named ${JSON.stringify(contextName)}${known.length ? ` (there are: ${known.join(', ')})` : ''}: add it with agentctl context add`);
  }
  const apiUrl = baseUrl('--api', flags.api ?? env.AGENTCTL_API_URL ?? target?.api_url ?? DEFAULT_API_URL);
  const edge = flags.edge ?? env.AGENTCTL_EDGE_URL;
  return Object.freeze({
    apiUrl,
    // A token from the file belongs to the API it was issued by; another --api gets none of it.
    token: env.AGENTCTL_TOKEN || (target?.token && (target.api_url ?? DEFAULT_API_URL) === apiUrl ? target.token : undefined),
    // So does the account selected with it.
    accountId: target?.account_id && (target.api_url ?? DEFAULT_API_URL) === apiUrl ? target.account_id : undefined,
    accessKey: env.AGENTCTL_ACCESS_KEY || undefined,
    edgeUrl: edge ? baseUrl('--edge', edge) : undefined,
    contextName,
    shell: env.SHELL ? env.SHELL.split('/').pop() : undefined,
    colour: colourWanted(flags.color, env, stdoutIsTty),
    configPath,
    stored,
  });
}

export function configPathOf(env: Environment): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'agentctl', 'config.json');
}

/**
 * Colour only where a person reads it: never with --no-color or a non-empty NO_COLOR
 * (no-color.org), always with a non-empty FORCE_COLOR other than 0 (as Node's own
 * tools read it), else when stdout is a terminal and TERM is not `dumb`.
 */
function colourWanted(flag: boolean | undefined, env: Environment, stdoutIsTty: boolean): boolean {
  if (flag === false || env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return env.FORCE_COLOR !== '0';
  return stdoutIsTty && env.TERM !== 'dumb';
}

export function baseUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${name} must be an http(s) URL such as ${DEFAULT_API_URL}, not ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${name} must be http or https, not ${url.protocol}`);
  return url.href.replace(/\/+$/, '');
}
