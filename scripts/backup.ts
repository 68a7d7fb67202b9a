import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { databaseName, locatePlatformState, runPg, type KeySource } from './lib/platform-state.js';
import { BACKUP_FILES, UsageError, type BackupManifest } from './lib/backup-files.js';

/**
 * `npm run backup -- <folder>`: the platform's database (pg_dump, custom format, one
 * consistent snapshot, taken while the platform runs) and its master keys, into a new
 * folder only its owner can read. Both halves are needed: without the keys, every secret in
 * the dump is unreadable. docs/operations.md says how to keep and restore them.
 */
async function main(args: string[]): Promise<void> {
  if (args.length !== 1 || args[0]!.startsWith('-')) throw new UsageError('usage: npm run backup -- <new folder>');
  const folder = resolve(args[0]!);
  if (existsSync(folder) && readdirSync(folder).length > 0) throw new UsageError(`${folder} is not empty: back up into a new folder`);
  const state = locatePlatformState(process.env);
  const keys = readKeys(state.keys);

  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const dump = join(folder, BACKUP_FILES.database);
  runPg('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${dump}`], state);
  // Reading the dump's table of contents proves it is complete and readable now, not on the day it is needed.
  const contents = runPg('pg_restore', ['--list', dump], state);
  writeFileSync(join(folder, BACKUP_FILES.keys), keys.endsWith('\n') ? keys : `${keys}\n`, { mode: 0o600 });

  const manifest: BackupManifest = {
    created_at: new Date().toISOString(),
    database: databaseName(state.databaseUrl),
    latest_migration: await latestMigration(state.databaseUrl),
    tables: contents.split('\n').filter((line) => / TABLE DATA /.test(line)).length,
    keys_from: 'file' in state.keys ? state.keys.file : state.keys.setting,
  };
  writeFileSync(join(folder, BACKUP_FILES.manifest), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  console.log(`Backed up ${manifest.database} (${statSync(dump).size} bytes, ${manifest.tables} tables, at migration ${manifest.latest_migration}) and the master keys into ${folder}.
Keep the keys (${BACKUP_FILES.keys}) apart from the dump: together they open every secret. Without them the dump's secrets are lost.`);
}

function readKeys(source: KeySource): string {
  if ('setting' in source) return source.value.replace(/,/g, '\n');
  if (!existsSync(source.file)) throw new UsageError(`the master keys file ${source.file} does not exist: set MASTER_KEYS_FILE (or MASTER_KEYS) as the control API has it`);
  return readFileSync(source.file, 'utf8');
}

/** The schema version the dump is at: a restore needs a release that knows this migration. */
async function latestMigration(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>('SELECT name FROM knex_migrations ORDER BY id DESC LIMIT 1');
    return rows[0]?.name ?? null;
  } finally {
    await client.end();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof UsageError ? 2 : 1);
});
