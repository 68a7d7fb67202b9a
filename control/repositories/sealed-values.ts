import type { Knex } from 'knex';
import type { StoredEnvEntry } from '../domain/deploy.js';
import type { StoredRegistryAuth } from '../domain/registry-auth.js';

/**
 * Tables that keep one sealed value per row in one column, read and written here in the
 * row shape of `agents` (the value as `api_key_sealed`, with no env): a webhook's signing
 * secret, a custom domain's certificate key (null until issued), the ACME account's key
 * (keyed by its directory URL), an agent's session messages (keyed by agent and session), the turns appended to them since (keyed by agent, session and version in one column), and an account's SSO client secret (keyed by account).
 */
const ONE_VALUE_TABLES = {
  webhooks: { key: ['id'], column: 'secret_sealed' },
  agent_domains: { key: ['id'], column: 'private_key_sealed' },
  acme_accounts: { key: ['directory_url'], column: 'key_sealed' },
  agent_sessions: { key: ['agent_id', 'session_id'], column: 'messages_sealed' },
  agent_session_appends: { key: ['id'], column: 'messages_sealed' },
  account_sso: { key: ['account_id'], column: 'client_secret_sealed' },
} as const;
type OneValueTable = keyof typeof ONE_VALUE_TABLES;

/**
 * Every table that keeps sealed values. `agents` and `deployments` keep them the same way:
 * the model key in `api_key_sealed`, the secret entries of `deploy.env`
 * (`{secret: true, sealed}`) and the registry credentials in `deploy.registry_auth.sealed`;
 * `deployments` holds each rollout's own copy, which a rollback
 * restores. The others keep one value a row (ONE_VALUE_TABLES).
 */
export const SEALED_TABLES = ['agents', 'deployments', 'webhooks', 'agent_domains', 'acme_accounts', 'agent_sessions', 'agent_session_appends', 'account_sso'] as const;
export type SealedTable = (typeof SEALED_TABLES)[number];

const isOneValueTable = (table: SealedTable): table is OneValueTable => table in ONE_VALUE_TABLES;

/**
 * A one-value table's row id as SQL, and the conditions that page by it and find a row by
 * it, each on the key's own index (the primary key). A two-column key reads as
 * `first/second`: its first column, an agent id, never holds a '/'. Column names are
 * this module's constants, never input.
 */
function rowKey(table: OneValueTable) {
  const [first, second] = ONE_VALUE_TABLES[table].key.map((column) => `"${column}"`);
  if (second === undefined) return { id: `${first}::text`, order: first!, after: `${first} > ?`, is: `${first} = ?`, bind: (id: string) => [id] };
  const parts = `split_part(?, '/', 1), substr(?, strpos(?, '/') + 1)`;
  return { id: `${first} || '/' || ${second}`, order: `${first}, ${second}`, after: `(${first}, ${second}) > (${parts})`, is: `(${first}, ${second}) = (${parts})`, bind: (id: string) => [id, id, id] };
}

/** A row's sealed values, locked for re-encryption. */
export interface SealedRow {
  id: string;
  api_key_sealed: string | null;
  env: StoredEnvEntry[];
  /** deploy.registry_auth; null without (one-value tables never have one). */
  registry_auth: StoredRegistryAuth | null;
}

/** How many sealed values carry one header: `v2` and a key id, or `v1` (no id). */
export interface SealedCount {
  format: string;
  key_id: string | null;
  count: number;
}

/** Each sealed value of `table` with its row id. `??` binds the table as an identifier. */
const SEALED_VALUES = `
  SELECT id, api_key_sealed AS value FROM ?? WHERE api_key_sealed IS NOT NULL
  UNION ALL
  SELECT id, entry->>'sealed' FROM ??, jsonb_array_elements(deploy->'env') entry WHERE entry->>'secret' = 'true'
  UNION ALL
  SELECT id, deploy->'registry_auth'->>'sealed' FROM ?? WHERE deploy->'registry_auth'->>'sealed' IS NOT NULL`;

/** A one-value table's values; its column, table and column again bind as identifiers. */
const oneValue = (table: OneValueTable) => `SELECT ${rowKey(table).id} AS id, ?? AS value FROM ?? WHERE ?? IS NOT NULL`;
const oneValueTables = Object.keys(ONE_VALUE_TABLES) as OneValueTable[];

/** Every sealed value of every table, as `id, value` rows, with its bindings. */
const ALL_SEALED_VALUES = {
  sql: [...['agents', 'deployments'].map(() => SEALED_VALUES), ...oneValueTables.map(oneValue)].join(' UNION ALL '),
  bindings: ['agents', 'agents', 'agents', 'deployments', 'deployments', 'deployments', ...oneValueTables.flatMap((table) => [ONE_VALUE_TABLES[table].column, table, ONE_VALUE_TABLES[table].column])],
};

/**
 * The SQL of master-key rotation (control/services/key-rotation.ts). Nothing here bumps
 * an agent's version or updated_at: re-encryption changes no value, so it must not look
 * like a change of the agent (a new job version to roll out, a new ETag).
 */
export class SealedValueRepository {
  constructor(private readonly db: Knex) {}

  /** Values by header across every table. The format is read as secret-box.ts writes it: `v2.<key id>.…` or `v1.…`. */
  async countByKey(): Promise<SealedCount[]> {
    const { rows } = await this.db.raw(
      `SELECT split_part(value, '.', 1) AS format,
              CASE WHEN split_part(value, '.', 1) = 'v2' THEN split_part(value, '.', 2) END AS key_id,
              count(*)::int AS count
         FROM (${ALL_SEALED_VALUES.sql}) sealed GROUP BY 1, 2 ORDER BY 3 DESC`,
      ALL_SEALED_VALUES.bindings,
    );
    return rows;
  }

  /** Values that do not start with `prefix` (the current key's header), across every table. */
  async countNotUnder(prefix: string): Promise<number> {
    const { rows } = await this.db.raw(`SELECT count(*)::int AS count FROM (${ALL_SEALED_VALUES.sql}) sealed WHERE NOT starts_with(value, ?)`, [
      ...ALL_SEALED_VALUES.bindings,
      prefix,
    ]);
    return rows[0].count;
  }

  /**
   * Locks, until the transaction ends, up to `limit` rows of `table` after id `after` that
   * hold a value not starting with `prefix`, in id order. A row a writer holds (an API
   * request changing the agent) is skipped rather than waited for: the rotation comes back
   * to it. NO KEY UPDATE, as an UPDATE of non-key columns takes, so inserting a deployment
   * or an event that references the row is not held up.
   */
  async lockNotUnder(table: SealedTable, prefix: string, after: string, limit: number): Promise<SealedRow[]> {
    if (isOneValueTable(table)) {
      const { column } = ONE_VALUE_TABLES[table];
      const key = rowKey(table);
      const { rows } = await this.db.raw(
        `SELECT ${key.id} AS id, ?? AS api_key_sealed, '[]'::jsonb AS env, NULL::jsonb AS registry_auth FROM ??
          WHERE ${key.after} AND NOT starts_with(??, ?)
          ORDER BY ${key.order} LIMIT ? FOR NO KEY UPDATE SKIP LOCKED`,
        [column, table, ...key.bind(after), column, prefix, limit],
      );
      return rows;
    }
    const { rows } = await this.db.raw(
      `SELECT id, api_key_sealed, deploy->'env' AS env, deploy->'registry_auth' AS registry_auth FROM ?? holder
        WHERE id > ?
          AND ((api_key_sealed IS NOT NULL AND NOT starts_with(api_key_sealed, ?))
               OR EXISTS (SELECT 1 FROM jsonb_array_elements(holder.deploy->'env') entry
                           WHERE entry->>'secret' = 'true' AND NOT starts_with(entry->>'sealed', ?))
               OR NOT starts_with(holder.deploy->'registry_auth'->>'sealed', ?))
        ORDER BY id LIMIT ? FOR NO KEY UPDATE SKIP LOCKED`,
      [table, after, prefix, prefix, prefix, limit],
    );
    return rows;
  }

  /** Writes a locked row's re-encrypted values; the rest of its deploy is left as it is. */
  async write(table: SealedTable, row: SealedRow): Promise<void> {
    if (isOneValueTable(table)) {
      const key = rowKey(table);
      await this.db.raw(`UPDATE ?? SET ?? = ? WHERE ${key.is}`, [table, ONE_VALUE_TABLES[table].column, row.api_key_sealed, ...key.bind(row.id)]);
      return;
    }
    // registry_auth is written back only where the row has one: jsonb_set would otherwise add a null.
    const deploy = row.registry_auth
      ? { sql: `jsonb_set(jsonb_set(deploy, '{env}', ?::jsonb), '{registry_auth}', ?::jsonb)`, bindings: [JSON.stringify(row.env), JSON.stringify(row.registry_auth)] }
      : { sql: `jsonb_set(deploy, '{env}', ?::jsonb)`, bindings: [JSON.stringify(row.env)] };
    await this.db.raw(`UPDATE ?? SET api_key_sealed = ?, deploy = ${deploy.sql} WHERE id = ?`, [table, row.api_key_sealed, ...deploy.bindings, row.id]);
  }
}
