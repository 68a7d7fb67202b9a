import { join, resolve } from 'node:path';
import { readSettings, type Env, type SettingDocs } from '../../contract/settings-reader.js';

/** What `npm run up` reads of its environment (README, "Configuration"). */
export interface UpSettings {
  /** PLATFORM_DATA_DIR (default: the checkout's .data/): Postgres, Redis, the master key and the edge's TLS files. */
  readonly dataDir: string;
  /** UP_POSTGRES_PORT: the Postgres `up` starts when DATABASE_URL names none. */
  readonly postgresPort: number;
  /** UP_REDIS_PORT: the Redis `up` starts when REDIS_URL names none. */
  readonly redisPort: number;
  /** EDGE_PORT and EDGE_HTTPS_PORT, which `up` waits on and writes into Envoy's bootstrap; the edge reads them too. */
  readonly edgePort: number;
  readonly edgeHttpsPort: number;
  /** PG_FSYNC=off: no durability for a throwaway cluster, as the test suites run `up`. */
  readonly postgresFsync: boolean;
  /**
   * The environment the platform's processes start with: all of `up`'s own, which it then
   * completes (the database and Redis it started, the wiring of authz and the edge).
   */
  readonly environment: Record<string, string>;
}

/** `up`'s settings, through the platform's reader: a bad port stops `up` before it starts anything. */
export function readUpSettings(env: Env, root: string): UpSettings {
  return readSettings(env, (read) => ({
    dataDir: resolve(read.string('PLATFORM_DATA_DIR', join(root, '.data'))),
    postgresPort: read.port('UP_POSTGRES_PORT', 7432),
    redisPort: read.port('UP_REDIS_PORT', 7379),
    edgePort: read.port('EDGE_PORT', 7080),
    edgeHttpsPort: read.port('EDGE_HTTPS_PORT', 7443),
    postgresFsync: read.oneOf('PG_FSYNC', ['on', 'off'] as const, 'on') === 'on',
    environment: read.passthrough((all) => Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined))),
  }));
}

/** What each of `up`'s own settings means, for docs/configuration.md. */
export const UP_SETTING_DOCS: SettingDocs = {
  PLATFORM_DATA_DIR: { text: "Where `up` keeps Postgres, Redis, the master key, the edge's TLS files and the podman driver's (PODMAN_STATE_DIR, `podman/`); `npm run admin`, `backup` and `restore` look there too.", default: '.data/ in the checkout' },
  UP_POSTGRES_PORT: 'Port of the Postgres `up` starts when DATABASE_URL is unset (and that `npm run admin` falls back to).',
  UP_REDIS_PORT: 'Port of the Redis `up` starts when REDIS_URL is unset.',
  EDGE_PORT: "The edge's plain HTTP port, which `up` waits on and writes into Envoy's bootstrap.",
  EDGE_HTTPS_PORT: "The edge's HTTPS port, likewise.",
  PG_FSYNC: 'off: no durability, for a throwaway cluster (the test suites run `up` so).',
};
