import type { Knex } from 'knex';

/**
 * Agents' conversation sessions (issue 37), written by replicas through the agent services
 * endpoint. A session id is the agent's own name for it: the key is (agent_id, session_id),
 * so two agents' same id are two sessions, and a session goes with its agent. The messages
 * are user data, sealed with the master keys like every secret (and re-sealed by key
 * rotation); `size_bytes` is their JSON's size before sealing, what SESSION_MAX_BYTES bounds.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_sessions', (t) => {
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('session_id').notNullable();
    t.integer('version').notNullable();
    t.text('messages_sealed').notNullable();
    t.integer('size_bytes').notNullable();
    t.integer('message_count').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['agent_id', 'session_id']);
  });
  // As control/domain/agent-session.ts checks it: 1 to 128 of these characters, not `.` or `..` (URL path steps).
  await knex.raw(`ALTER TABLE agent_sessions ADD CONSTRAINT agent_sessions_id_check CHECK (session_id ~ '^[A-Za-z0-9._:-]{1,128}$' AND session_id NOT IN ('.', '..'))`);
  await knex.raw('ALTER TABLE agent_sessions ADD CONSTRAINT agent_sessions_version_check CHECK (version >= 1)');
  // Eviction takes an agent's least recently used; the owner's listing shows the most recent first.
  await knex.raw('CREATE INDEX agent_sessions_agent_last_used ON agent_sessions (agent_id, last_used_at)');
  // The TTL sweep deletes what expired, across agents.
  await knex.raw('CREATE INDEX agent_sessions_expires ON agent_sessions (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('agent_sessions');
}
