import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, type Env } from './settings-reader.js';

/**
 * Loads a dotenv file into process.env before an entry point hands process.env to its
 * settings loader: the file `--env-file=PATH` (or `--env-file PATH`) names, else the one in
 * ENV_FILE, else `.env` in the working directory when there is one. Node's own parser
 * (process.loadEnvFile) leaves a variable that is already set as it is, so the environment
 * wins over the file. A named file that cannot be read stops the start, as any bad setting
 * does; a missing `.env` is no file at all. Returns the path loaded, or null.
 *
 * `env` is only read (for ENV_FILE): the entry point passes process.env, whole.
 */
export function loadEnvFile(
  env: Env,
  argv: readonly string[],
  cwd: string = process.cwd(),
  load: (path: string) => void = (path) => process.loadEnvFile(path),
): string | null {
  const flag = envFileArgument(argv);
  const named = flag ?? (env.ENV_FILE ? { setting: 'ENV_FILE', path: env.ENV_FILE } : null);
  if (named === null) {
    const path = resolve(cwd, '.env');
    if (!existsSync(path)) return null;
    load(path);
    return path;
  }
  const path = resolve(cwd, named.path);
  try {
    load(path);
  } catch (error) {
    throw new ConfigError([`${named.setting}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  return path;
}

function envFileArgument(argv: readonly string[]): { setting: string; path: string } | null {
  for (const [index, argument] of argv.entries()) {
    if (argument.startsWith('--env-file=')) return { setting: '--env-file', path: argument.slice('--env-file='.length) };
    if (argument === '--env-file') {
      const path = argv[index + 1];
      if (path === undefined || path === '') throw new ConfigError(['--env-file: expected a path, as --env-file=PATH']);
      return { setting: '--env-file', path };
    }
  }
  return null;
}
