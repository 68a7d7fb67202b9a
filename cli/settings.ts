import { homedir } from 'node:os';
import { join } from 'node:path';
import { readConfigFile, type StoredConfig } from './config-file.js';
import { UsageError } from './errors.js';

export const DEFAULT_API_URL = 'http://127.0.0.1:7070/v1';

/** Everything agentctl reads from its environment and config file, read once at start. */
export interface Settings {
  /** The control API's base URL, /v1 included, without a trailing slash. */
  readonly apiUrl: string;
  readonly token: string | undefined;
  /** An agent's access key for `invoke`, when --key is not given. */
  readonly accessKey: string | undefined;
  /** Where `invoke` connects instead of the agent URL's host (the agent's hostname goes in Host). */
  readonly edgeUrl: string | undefined;
  readonly configPath: string;
  readonly stored: StoredConfig;
}

/** The environment agentctl was started with, as cli/main.ts hands it down. */
export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Precedence, highest first: the flag, the environment, the config file `login` wrote,
 * the default. The only reader of the environment in cli/.
 */
export function loadSettings(flags: { api?: string | undefined; edge?: string | undefined }, env: Environment): Settings {
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  const configPath = join(configHome, 'agentctl', 'config.json');
  const stored = readConfigFile(configPath);
  const apiUrl = baseUrl('--api', flags.api ?? env.AGENTCTL_API_URL ?? stored.api_url ?? DEFAULT_API_URL);
  const edge = flags.edge ?? env.AGENTCTL_EDGE_URL;
  return Object.freeze({
    apiUrl,
    // A token from the file belongs to the API it was issued by; another --api gets none of it.
    token: env.AGENTCTL_TOKEN || (stored.token && (stored.api_url ?? DEFAULT_API_URL) === apiUrl ? stored.token : undefined),
    accessKey: env.AGENTCTL_ACCESS_KEY || undefined,
    edgeUrl: edge ? baseUrl('--edge', edge) : undefined,
    configPath,
    stored,
  });
}

function baseUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${name} must be an http(s) URL such as ${DEFAULT_API_URL}, not ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${name} must be http or https, not ${url.protocol}`);
  return url.href.replace(/\/+$/, '');
}
