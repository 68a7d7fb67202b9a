import { readFile } from 'node:fs/promises';
import { createPrivateKey } from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { AcmeClient } from '../acme/acme-client.js';
import { generateAccountKey } from '../acme/jws.js';
import type { DomainSettings } from '../config/config.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { repositoriesOn } from '../repositories/index.js';

/** Opens the ACME client lazily and keeps it; a failed open is tried again at the next call. */
export type AcmeClientSource = () => Promise<AcmeClient>;

/**
 * The platform's one account at the configured CA. Its key is made once, sealed with the
 * master keys in `acme_accounts` (rotated with them, see repositories/sealed-values.ts),
 * and reused by every copy of the control API: a CA counts rate limits per account
 * (Let's Encrypt: new orders per account), so new keys per start would spend them.
 */
export function acmeClientSource(db: Knex, box: SecretBox, clock: Clock, settings: DomainSettings): AcmeClientSource {
  let opened: Promise<AcmeClient> | undefined;
  return () => {
    opened ??= open().catch((error: unknown) => {
      opened = undefined;
      throw error;
    });
    return opened;
  };

  async function open(): Promise<AcmeClient> {
    const accounts = repositoriesOn(db).acmeAccounts;
    const directoryUrl = settings.acmeDirectoryUrl;
    if (!(await accounts.find(directoryUrl))) {
      const key = generateAccountKey().export({ format: 'pem', type: 'pkcs8' }).toString();
      await accounts.insertIfAbsent({ directory_url: directoryUrl, account_url: null, key_sealed: box.seal(key), created_at: clock.now() });
    }
    const account = (await accounts.find(directoryUrl))!;
    const ca = settings.acmeCaFile ? await readFile(settings.acmeCaFile, 'utf8') : null;
    const client = await AcmeClient.open({
      directoryUrl,
      accountKey: createPrivateKey(box.open(account.key_sealed)),
      accountUrl: account.account_url,
      email: settings.acmeEmail,
      ca,
    });
    if (client.accountUrl !== account.account_url) await accounts.setAccountUrl(directoryUrl, client.accountUrl);
    return client;
  }
}
