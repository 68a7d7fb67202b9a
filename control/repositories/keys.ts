import type { Knex } from 'knex';
import type { SignInMethod } from '../domain/sso.js';
import { insertUnlessParentGone } from './parent-gone.js';
import { withDefaultRole, type UserRow } from './users.js';

/** The shape shared by personal API keys and agent access keys: only the hash is stored. */
export interface KeyRow {
  id: string;
  label: string;
  key_hash: string;
  key_preview: string;
  created_at: Date;
}

export interface ApiKeyRow extends KeyRow {
  user_id: string;
  /** How the session that created the key signed in (migration 014): an account requiring SSO refuses keys from a password session. */
  created_by_method?: SignInMethod;
}

export interface AccessKeyRow extends KeyRow {
  agent_id: string;
}

const listed = ['id', 'label', 'key_preview', 'created_at'] as const;

export class ApiKeyRepository {
  constructor(private readonly db: Knex) {}

  /** False when the user is gone: deleted while their request was under way. */
  async insert(row: ApiKeyRow): Promise<boolean> {
    return insertUnlessParentGone(this.db('api_keys'), row);
  }

  async listForUser(userId: string): Promise<KeyRow[]> {
    return this.db('api_keys').where({ user_id: userId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).select(listed);
  }

  async delete(userId: string, id: string): Promise<boolean> {
    return (await this.db('api_keys').where({ user_id: userId, id }).delete()) > 0;
  }

  /** The key's user, and the key's id (the actor of what is done with it, in the audit log); by the key's hash, or by its id for an open stream's re-check. */
  async findUser(key: { hash: string } | { id: string }): Promise<(UserRow & { api_key_id: string }) | undefined> {
    const where = 'hash' in key ? { 'api_keys.key_hash': key.hash } : { 'api_keys.id': key.id };
    return withDefaultRole(this.db('users')).join('api_keys', 'api_keys.user_id', 'users.id').where(where).first('api_keys.id as api_key_id');
  }
}

export class AccessKeyRepository {
  constructor(private readonly db: Knex) {}

  async insert(row: AccessKeyRow): Promise<void> {
    await this.db('access_keys').insert(row);
  }

  async listForAgent(agentId: string): Promise<KeyRow[]> {
    return this.db('access_keys').where({ agent_id: agentId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).select(listed);
  }

  /** Returns the removed key's hash, which the edge's projection must forget too. */
  async delete(agentId: string, id: string): Promise<string | undefined> {
    const [removed] = await this.db('access_keys').where({ agent_id: agentId, id }).delete(['key_hash']);
    return removed?.key_hash;
  }

  async hashesForAgent(agentId: string): Promise<string[]> {
    const rows: { key_hash: string }[] = await this.db('access_keys').where({ agent_id: agentId }).select('key_hash');
    return rows.map((row) => row.key_hash);
  }
}
