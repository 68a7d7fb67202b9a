import type { KeysCommand } from './admin-command.js';
import { loadAdminMasterKeys, loadDatabaseUrl } from '../config/config.js';
import { SecretBox } from '../crypto/secret-box.js';
import { connectDatabase, migrate } from '../db/database.js';
import type { Env } from '../../contract/settings-reader.js';
import { KeyRotation, UnopenableValueError, type KeyCount } from '../services/key-rotation.js';

/**
 * `npm run admin -- keys status|rotate` (docs/operations.md, "Master-key rotation").
 * The keys are read before Postgres is reached, so a bad MASTER_KEYS fails first.
 * A rotation that ends with values left under other keys exits 1.
 */
export async function runKeysCommand(command: KeysCommand, env: Env): Promise<void> {
  const box = new SecretBox(loadAdminMasterKeys(env));
  const db = connectDatabase(loadDatabaseUrl(env), { min: 0, max: 2 });
  try {
    await migrate(db);
    const rotation = new KeyRotation(db, box);
    if (command.kind === 'keys-status') {
      console.log(describeStatus(await rotation.status(), box));
      return;
    }
    console.log(`rotating to master key ${box.currentKeyId} (key 1 of ${box.keyIds.length} in MASTER_KEYS), ${command.batchSize} rows per transaction`);
    const result = await rotation
      .rotate({
        batchSize: command.batchSize,
        limit: command.limit,
        onProgress: (done, total, table) => console.log(`re-encrypted ${done}/${total} values (${table})`),
      })
      .catch((error: unknown) => {
        if (!(error instanceof UnopenableValueError)) throw error;
        console.error(`stopped: ${error.message}. Batches before it are committed; run keys rotate again once the key is back (keys status lists what is under it)`);
        process.exitCode = 1;
        return undefined;
      });
    if (!result) return;
    if (result.stoppedAtLimit) {
      console.log(`stopped at --limit: re-encrypted ${result.reEncrypted} values, ${result.left} left; run keys rotate again to continue`);
    } else if (result.left === 0) {
      console.log(`done: re-encrypted ${result.reEncrypted} values; every sealed value is under master key ${box.currentKeyId}`);
    } else {
      console.error(
        `re-encrypted ${result.reEncrypted} values, but ${result.left} are still not under master key ${box.currentKeyId}: rows held by ` +
          'writers, or a copy of the control API that still seals with an older key (is the new key first in its MASTER_KEYS?). Run keys rotate again',
      );
      process.exitCode = 1;
    }
  } finally {
    await db.destroy();
  }
}

/** One line per key id, and what the operator may do next. */
export function describeStatus(counts: KeyCount[], box: SecretBox): string {
  const place = (keyId: string) => `key ${box.keyIds.indexOf(keyId) + 1} of ${box.keyIds.length} in MASTER_KEYS`;
  const meaning = ({ keyId, values, standing }: KeyCount): string => {
    switch (standing) {
      case 'current':
        return `current (${place(keyId!)})`;
      case 'older':
        return values === 0 ? `older (${place(keyId!)}): no value under it, it may leave MASTER_KEYS` : `older (${place(keyId!)}): run keys rotate`;
      case 'v1':
        return 'from before key ids (v1): run keys rotate';
      case 'not configured':
        return 'NOT in MASTER_KEYS: these cannot be opened until its key is added back';
    }
  };
  const lines = counts.map((count) => `${(count.keyId ?? 'v1').padEnd(12)} ${String(count.values).padStart(8)}  ${meaning(count)}`);
  const notCurrent = counts.filter((count) => count.standing !== 'current').reduce((sum, count) => sum + count.values, 0);
  const summary =
    notCurrent === 0
      ? `every sealed value is under the current key ${box.currentKeyId}: older keys may leave MASTER_KEYS`
      : `${notCurrent} sealed values are not under the current key ${box.currentKeyId}`;
  return [`${'key id'.padEnd(12)} ${'values'.padStart(8)}`, ...lines, summary].join('\n');
}
