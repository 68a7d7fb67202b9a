import { createCipheriv, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

/** A value as the control API sealed it before keys had ids (the SecretBox of commit 9ab66a9: `v1.<nonce>.<tag>.<ciphertext>`, no AAD). */
export function sealV1(key: Buffer, plaintext: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', nonce.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

/** One sealed value where Postgres keeps it: the model key or a secret env entry, of an agent or a deployment. */
export interface SealedPlace {
  place: string;
  sealed: string;
}

/**
 * Every sealed value in the database, read independently of the code under test: each
 * table's `api_key_sealed`, its deploy's secret env entries and its registry credentials.
 */
export async function sealedPlaces(db: Knex): Promise<SealedPlace[]> {
  const places: SealedPlace[] = [];
  for (const table of ['agents', 'deployments']) {
    for (const row of await db(table).select('id', 'api_key_sealed', 'deploy').orderBy('id')) {
      if (row.api_key_sealed) places.push({ place: `${table} ${row.id} api_key`, sealed: row.api_key_sealed });
      for (const entry of row.deploy.env) if (entry.secret) places.push({ place: `${table} ${row.id} env ${entry.key}`, sealed: entry.sealed });
      if (row.deploy.registry_auth) places.push({ place: `${table} ${row.id} registry_auth`, sealed: row.deploy.registry_auth.sealed });
    }
  }
  return places;
}
