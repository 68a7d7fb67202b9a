import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { databaseName, locatePlatformState, maintenanceUrl, runPg, type KeySource } from './lib/platform-state.js';
import { BACKUP_FILES, UsageError, type BackupManifest } from './lib/backup-files.js';

const USAGE = 'usage: npm run restore -- [--replace] <backup folder>';

/**
 * `npm run restore -- [--replace] <folder>`, with the control API stopped: puts a backup's
 * database and master keys back where the platform's settings say they live. It refuses to
 * restore over a database that holds tables, or to overwrite a different key file, unless
 * --replace: either would throw away what is there now. Redis is left alone: the control
 * API's first reconcile rebuilds the edge's projection from the restored database.
 */
async function main(args: string[]): Promise<void> {
  const { folder, replace } = parse(args);
  const files = { dump: join(folder, BACKUP_FILES.database), keys: join(folder, BACKUP_FILES.keys), manifest: join(folder, BACKUP_FILES.manifest) };
  for (const file of Object.values(files)) if (!existsSync(file)) throw new UsageError(`${file} is missing: is ${folder} a folder npm run backup wrote?`);
  const manifest = JSON.parse(readFileSync(files.manifest, 'utf8')) as BackupManifest;
  const keys = readFileSync(files.keys, 'utf8');
  const state = locatePlatformState(process.env);
  // Everything that can refuse does so before anything is changed.
  runPg('pg_restore', ['--list', files.dump], state);
  checkKeyTarget(state.keys, keys, replace);

  await prepareDatabase(state.databaseUrl, replace);
  // One transaction: a failure halfway leaves the database empty, never half restored.
  runPg('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--dbname=${databaseName(state.databaseUrl)}`, files.dump], state);
  if ('file' in state.keys) {
    mkdirSync(dirname(state.keys.file), { recursive: true, mode: 0o700 });
    writeFileSync(state.keys.file, keys, { mode: 0o600 });
  }
  console.log(`Restored ${databaseName(state.databaseUrl)} from the backup of ${manifest.created_at} (migration ${manifest.latest_migration}) and the master keys${'file' in state.keys ? ` into ${state.keys.file}` : ''}.
Start the control API (a release that has migration ${manifest.latest_migration}): its first reconcile rebuilds the edge's routes and keys in Redis and starts the agents' containers.`);
}

function parse(args: string[]): { folder: string; replace: boolean } {
  try {
    const { values, positionals } = parseArgs({ args, strict: true, allowPositionals: true, options: { replace: { type: 'boolean', default: false } } });
    if (positionals.length !== 1) throw new Error('one backup folder is required');
    return { folder: resolve(positionals[0]!), replace: values.replace };
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${USAGE}`);
  }
}

/**
 * Overwriting a key file that holds other keys would lose every secret they sealed; keys
 * given inline are the operator's to change, so a mismatch is only reported.
 */
function checkKeyTarget(target: KeySource, keys: string, replace: boolean): void {
  const same = (text: string) => normalise(text) === normalise(keys);
  if ('setting' in target) {
    if (!same(target.value)) throw new UsageError(`${target.setting} in the environment is not the backup's keys: set MASTER_KEYS to the lines of ${BACKUP_FILES.keys}, comma-separated, then run this again`);
    return;
  }
  if (existsSync(target.file) && !same(readFileSync(target.file, 'utf8')) && !replace) {
    throw new UsageError(`${target.file} holds other master keys: overwriting them loses the secrets they sealed. Move it aside, or pass --replace`);
  }
}

const normalise = (text: string) => text.split(/[\n,]/).map((line) => line.trim()).filter((line) => line && !line.startsWith('#')).join('\n');

/** An empty database of the configured name: created if missing; one with tables is dropped only with --replace. */
async function prepareDatabase(url: string, replace: boolean): Promise<void> {
  const name = databaseName(url);
  const admin = new pg.Client({ connectionString: maintenanceUrl(url) });
  await admin.connect();
  try {
    const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    const populated = exists && (await tableCount(url)) > 0;
    if (populated && !replace) throw new UsageError(`database ${name} holds tables: stop the control API and pass --replace to drop it, or restore into another DATABASE_URL`);
    // WITH (FORCE) ends the sessions still connected (PostgreSQL 13+); the control API should be stopped already.
    if (populated) await admin.query(`DROP DATABASE ${quoteIdentifier(name)} WITH (FORCE)`);
    if (!exists || populated) await admin.query(`CREATE DATABASE ${quoteIdentifier(name)}`);
  } finally {
    await admin.end();
  }
}

async function tableCount(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: string }>("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
    return Number(rows[0]!.count);
  } finally {
    await client.end();
  }
}

const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof UsageError ? 2 : 1);
});
