import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CliError, EXIT } from './errors.js';

/** What `login` and `register` keep between runs. */
export interface StoredConfig {
  api_url?: string;
  token?: string;
  expires_at?: string;
  email?: string;
}

/** The file's contents, or an empty config when there is none yet. */
export function readConfigFile(path: string): StoredConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as StoredConfig;
  } catch {
    // reported below, as for a JSON value that is not an object
  }
  throw new CliError(`${path} is not a JSON object: fix or delete it, then sign in again`, EXIT.usage);
}

/**
 * Writes the config readable by its owner only (0600, in a 0700 directory): it holds a
 * session token. Written beside and renamed, so a crash never leaves half a file, and
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
