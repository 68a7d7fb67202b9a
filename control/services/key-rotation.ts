import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import type { StoredEnvEntry } from '../domain/deploy.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import { SEALED_TABLES, type SealedRow, type SealedTable } from '../repositories/sealed-values.js';

/** Where a key id stands for the keyring this command was given. */
export type KeyStanding = 'current' | 'older' | 'not configured' | 'v1';

export interface KeyCount {
  /** null for v1 values, sealed before ciphertexts named their key. */
  keyId: string | null;
  values: number;
  standing: KeyStanding;
}

export interface RotationOptions {
  /** Rows re-encrypted per transaction. */
  batchSize: number;
  /** Stop after this many rows (a rerun continues); unset: until none is left. */
  limit?: number;
  /** After every committed batch: values re-encrypted so far, and of how many. */
  onProgress?: (done: number, total: number, table: SealedTable) => void;
}

export interface RotationResult {
  /** Values this run re-encrypted. */
  reEncrypted: number;
  /** Values not under the current key when the run ended. */
  left: number;
  /** Whether the run stopped at `limit` rather than running out of work. */
  stoppedAtLimit: boolean;
}

/** A value the keyring cannot open: the run stops, its batch rolled back. Names the row and the key id, never a key. */
export class UnopenableValueError extends Error {
  constructor(table: SealedTable, rowId: string, cause: Error) {
    super(`${table} ${rowId}: ${cause.message}`, { cause });
    this.name = 'UnopenableValueError';
  }
}

/**
 * Sweeps past rows that writers held this often, a second apart, before reporting what is
 * left: an API request holds a row for milliseconds, so a row still held (or rewritten
 * under an older key) after that is worth the operator's look.
 */
const SWEEPS = 5;
const BETWEEN_SWEEPS_MS = 1000;

/**
 * Master-key rotation (`npm run admin -- keys rotate|status`): re-encrypts every sealed
 * value that is not under the current key, in batches of rows, each batch one transaction
 * holding its rows' locks, online while the control API runs.
 *
 * - A concurrent API write is never overwritten: a batch reads the rows it locks, so it
 *   re-encrypts what is committed, and skips rows a request holds (SKIP LOCKED) to come
 *   back to them on the next sweep.
 * - Resumable by construction: a run touches only values not under the current key, so a
 *   rerun after a crash or `limit` continues where the last committed batch left off; a
 *   batch that died rolled back whole.
 */
export class KeyRotation {
  constructor(private readonly db: Knex, private readonly box: SecretBox, private readonly sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))) {}

  /** Values per key id, so the operator knows when an older key may leave MASTER_KEYS (none left under it). */
  async status(): Promise<KeyCount[]> {
    const counts = await repositoriesOn(this.db).sealedValues.countByKey();
    const configured = this.box.keyIds;
    const listed: KeyCount[] = counts.map(({ format, key_id, count }) => ({
      keyId: format === 'v2' ? key_id : null,
      values: count,
      standing: format !== 'v2' ? 'v1' : key_id === this.box.currentKeyId ? 'current' : configured.includes(key_id!) ? 'older' : 'not configured',
    }));
    // Configured keys with no value under them are listed too: those are the ones that may go.
    for (const keyId of configured) {
      if (!listed.some((count) => count.keyId === keyId)) listed.push({ keyId, values: 0, standing: keyId === this.box.currentKeyId ? 'current' : 'older' });
    }
    return listed;
  }

  async rotate(options: RotationOptions): Promise<RotationResult> {
    const prefix = this.box.currentPrefix;
    const sealed = repositoriesOn(this.db).sealedValues;
    let total = await sealed.countNotUnder(prefix);
    let reEncrypted = 0;
    let rows = 0;
    for (let sweep = 1; ; sweep += 1) {
      for (const table of SEALED_TABLES) {
        let after = '';
        for (;;) {
          const room = options.limit === undefined ? options.batchSize : Math.min(options.batchSize, options.limit - rows);
          if (room <= 0) {
            const left = await sealed.countNotUnder(prefix);
            return { reEncrypted, left, stoppedAtLimit: left > 0 };
          }
          const batch = await this.reEncryptBatch(table, after, room);
          if (batch.rows === 0) break;
          after = batch.lastId;
          rows += batch.rows;
          reEncrypted += batch.values;
          total = Math.max(total, reEncrypted);
          options.onProgress?.(reEncrypted, total, table);
        }
      }
      const left = await sealed.countNotUnder(prefix);
      if (left === 0 || sweep === SWEEPS) return { reEncrypted, left, stoppedAtLimit: false };
      // Rows a writer held, or rewrote under an older key meanwhile: come back to them shortly.
      total = reEncrypted + left;
      await this.sleep(BETWEEN_SWEEPS_MS);
    }
  }

  private reEncryptBatch(table: SealedTable, after: string, limit: number): Promise<{ rows: number; values: number; lastId: string }> {
    return inTransaction(this.db, async (repos) => {
      const rows = await repos.sealedValues.lockNotUnder(table, this.box.currentPrefix, after, limit);
      let values = 0;
      for (const row of rows) {
        const resealed = this.reseal(table, row);
        values += resealed.values;
        await repos.sealedValues.write(table, resealed.row);
      }
      return { rows: rows.length, values, lastId: rows.at(-1)?.id ?? after };
    });
  }

  /** The row with every value not under the current key opened and sealed again; the rest kept byte for byte. */
  private reseal(table: SealedTable, row: SealedRow): { row: SealedRow; values: number } {
    let values = 0;
    const again = (value: string): string => {
      if (this.box.isCurrent(value)) return value;
      values += 1;
      try {
        return this.box.seal(this.box.open(value));
      } catch (error) {
        // Which row, never what it holds; the batch rolls back and the run stops here.
        throw new UnopenableValueError(table, row.id, error as Error);
      }
    };
    const env = (row.env ?? []).map((entry): StoredEnvEntry => (entry.secret ? { ...entry, sealed: again(entry.sealed) } : entry));
    const api_key_sealed = row.api_key_sealed === null ? null : again(row.api_key_sealed);
    const registry_auth = row.registry_auth ? { ...row.registry_auth, sealed: again(row.registry_auth.sealed) } : null;
    return { row: { id: row.id, api_key_sealed, env, registry_auth }, values };
  }
}
