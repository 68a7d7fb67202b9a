/** What a backup folder holds (scripts/backup.ts writes it, scripts/restore.ts reads it). */
export const BACKUP_FILES = {
  /** pg_dump's custom format: compressed, restorable table by table. */
  database: 'postgres.dump',
  /** The master keys, the current first, one a line: the format MASTER_KEYS_FILE reads. */
  keys: 'master-keys',
  manifest: 'manifest.json',
} as const;

export interface BackupManifest {
  created_at: string;
  database: string;
  /** The newest migration the dump holds: a restore needs a release that has it. */
  latest_migration: string | null;
  tables: number;
  /** The key file or setting the keys were read from. */
  keys_from: string;
}

/** A mistake in how the script was called: exit code 2, the message says what to do. */
export class UsageError extends Error {}
