import type { Knex } from 'knex';

/**
 * Until when a parked agent's replica stays warm-parked: its container frozen, its memory
 * held (issue 40, docs/scaling.md "Warm and cold parking"). Set by the idle parker when the
 * driver can freeze a replica (podman), from the deploy's warm_park_seconds; null when the
 * agent is not parked, is parked cold, or runs on a driver that cannot (Nomad). The plan's
 * memory quota counts a warm-parked replica until then, and the driver cold-parks it then.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.timestamp('warm_parked_until', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('warm_parked_until');
  });
}
