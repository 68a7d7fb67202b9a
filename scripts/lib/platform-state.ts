import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { loadDatabaseUrl } from '../../control/config/config.js';
import { postgresBinDir } from './local-services.js';

/**
 * Where a platform keeps what a backup must hold, found by the rules the control API and
 * `npm run admin` use: the database (DATABASE_URL, or the Postgres `npm run up` runs under
 * .data/) and the master keys (one of the four settings control/config/master-key-settings.ts
 * reads, or the file `npm run up` makes in .data/). Redis is not here: it holds only what
 * the control API rebuilds from Postgres (docs/operations.md, "Backup and restore").
 */
export interface PlatformState {
  databaseUrl: string;
  keys: KeySource;
  /** The command's environment, which pg_dump and pg_restore start with (PATH, libpq's own PG* settings). */
  environment: Env;
}

/** A file the keys are read from, or a setting holding them inline (which a restore cannot write). */
export type KeySource = { file: string } | { setting: 'MASTER_KEYS' | 'MASTER_KEY'; value: string };

type Env = Record<string, string | undefined>;

export function locatePlatformState(env: Env): PlatformState {
  return { databaseUrl: loadDatabaseUrl(env), keys: keySource(env), environment: env };
}

function keySource(env: Env): KeySource {
  for (const setting of ['MASTER_KEYS_FILE', 'MASTER_KEY_FILE'] as const) if (env[setting]) return { file: env[setting]! };
  for (const setting of ['MASTER_KEYS', 'MASTER_KEY'] as const) if (env[setting]) return { setting, value: env[setting]! };
  return { file: join(env.PLATFORM_DATA_DIR ?? '.data', 'master.key') };
}

/**
 * libpq's environment for `url` (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE),
 * so pg_dump and pg_restore get the password without it showing in the process list.
 */
export function libpqEnvironment(url: string): Record<string, string> {
  const parsed = new URL(url);
  const sslmode = parsed.searchParams.get('sslmode');
  return {
    PGHOST: decodeURIComponent(parsed.hostname),
    PGPORT: parsed.port || '5432',
    PGUSER: decodeURIComponent(parsed.username),
    PGPASSWORD: decodeURIComponent(parsed.password),
    PGDATABASE: databaseName(url),
    ...(sslmode ? { PGSSLMODE: sslmode } : {}),
  };
}

export const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));

/** The same server's maintenance database, from which a database is created or dropped. */
export function maintenanceUrl(url: string): string {
  const parsed = new URL(url);
  parsed.pathname = '/postgres';
  return parsed.toString();
}

/** A PostgreSQL client program: the newest Debian server's (pg_dump must be at least the server's version), else the one on PATH. */
export function pgProgram(name: 'pg_dump' | 'pg_restore'): string {
  try {
    return join(postgresBinDir(), name);
  } catch {
    return name;
  }
}

/** Runs a PostgreSQL program with the platform's database in its libpq environment; its stderr reaches the operator. */
export function runPg(name: 'pg_dump' | 'pg_restore', args: string[], state: PlatformState): string {
  return execFileSync(pgProgram(name), args, {
    env: { ...state.environment, ...libpqEnvironment(state.databaseUrl) },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
}
