import type { Knex } from 'knex';

/**
 * A session's appended turns as rows of their own (issue 37's speed goal). Until now every
 * append rewrote the session's whole sealed messages: a 1 MiB conversation cost 1 MiB of
 * sealing and of write-ahead log per turn, and a read of it first. Now an append inserts
 * only its own messages, sealed, in the statement that moves the session's version; a read
 * joins the base (`agent_sessions.messages_sealed`, as of `base_version`) and the appends
 * after it. A replace, or a compaction after enough appends, folds them into the base again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_session_appends', (t) => {
    t.text('agent_id').notNullable();
    t.text('session_id').notNullable();
    /** The session's version that this append made. */
    t.integer('version').notNullable();
    t.text('messages_sealed').notNullable();
    t.unique(['agent_id', 'session_id', 'version']);
    // A single-column key, as master-key rotation pages through sealed values by one (repositories/sealed-values.ts);
    // neither id holds a '/', and the padded version keeps a session's appends in order.
    t.specificType('id', "text GENERATED ALWAYS AS (agent_id || '/' || session_id || '/' || lpad(version::text, 10, '0')) STORED");
    t.primary(['id']);
    t.foreign(['agent_id', 'session_id']).references(['agent_id', 'session_id']).inTable('agent_sessions').onDelete('CASCADE');
  });
  await knex.schema.alterTable('agent_sessions', (t) => t.integer('base_version').nullable());
  await knex('agent_sessions').update({ base_version: knex.ref('version') });
  await knex.raw('ALTER TABLE agent_sessions ALTER COLUMN base_version SET NOT NULL');
}

/**
 * The release before this one reads only the base. A session with appends after it would
 * read as the conversation without its latest turns, silently; it is deleted instead, so
 * that the agent starts it again knowingly (SESSION_NOT_FOUND).
 */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DELETE FROM agent_sessions WHERE base_version < version');
  await knex.schema.dropTable('agent_session_appends');
  await knex.schema.alterTable('agent_sessions', (t) => t.dropColumn('base_version'));
}
