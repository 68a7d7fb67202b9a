import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { sha256Hex } from '../../control/crypto/tokens.js';
import type { ApiResponse, TestControl } from './control-harness.js';

/**
 * What a REST client of the control API checks again and again: the error body shape,
 * creating an agent, and invites (made in the database until the admin command exists).
 */

/** Asserts docs/contract.md's error body `{code, message, details}`; with `loc`, that a 422 names that field. */
export function expectError(response: ApiResponse, status: number, code: string, loc?: (string | number)[]): void {
  const shown = JSON.stringify(response.body);
  assert.equal(response.status, status, `expected ${status} ${code}, got ${response.status} ${shown}`);
  assert.equal(response.body?.code, code, shown);
  assert.equal(typeof response.body.message, 'string', shown);
  assert.ok(response.body.details !== null && typeof response.body.details === 'object', `details must be an object: ${shown}`);
  if (status === 422) {
    const errors = response.body.details.errors;
    assert.ok(Array.isArray(errors) && errors.length > 0, `422 must list details.errors: ${shown}`);
    for (const error of errors) {
      assert.ok(Array.isArray(error.loc), shown);
      assert.equal(typeof error.msg, 'string', shown);
      assert.equal(typeof error.type, 'string', shown);
    }
  }
  if (loc) {
    const locs = (response.body.details.errors ?? []).map((error: { loc: unknown }) => JSON.stringify(error.loc));
    assert.ok(locs.includes(JSON.stringify(loc)), `expected an error at ${JSON.stringify(loc)}, got ${locs.join(' ')}`);
  }
}

/** A request a replica sends to the agent services endpoint (Sessions API v1): `path` under /v1, with the replica's token. */
export async function agentServicesRequest(control: TestControl, token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${control.agentServicesUrl}/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/** Asserts a status, showing the body when it differs. */
export function expectStatus(response: ApiResponse, status: number): void {
  assert.equal(response.status, status, `expected ${status}, got ${response.status} ${JSON.stringify(response.body)}`);
}

export async function createAgent(control: TestControl, token: string, body: Record<string, unknown> = {}): Promise<any> {
  const response = await control.request('POST', '/agents', { token, body: { name: 'test agent', ...body } });
  expectStatus(response, 201);
  return response.body;
}

/**
 * An unused invite code: `accountId` null opens a new account, otherwise the user joins
 * that account with `role`.
 */
export async function createInvite(db: Knex, accountId: string | null = null, role: string | null = null): Promise<string> {
  const code = `invite_${randomBytes(12).toString('hex')}`;
  await db('invites').insert({
    id: `inv_${randomBytes(8).toString('hex')}`,
    code_hash: sha256Hex(code),
    account_id: accountId,
    role,
    created_at: new Date(),
    used_at: null,
    used_by: null,
  });
  return code;
}

/** A second user of `accountId` with `role`, signed in. */
export async function signUpMember(control: TestControl, accountId: string, role: string) {
  return control.signUp({ invite_code: await createInvite(control.db, accountId, role) });
}

/** Every row of every table as one JSON text, to check a secret is stored nowhere in the clear. */
export async function databaseText(db: Knex): Promise<string> {
  const tables: { tablename: string }[] = await db('pg_tables').where({ schemaname: 'public' }).select('tablename');
  const rows: Record<string, unknown[]> = {};
  for (const { tablename } of tables) rows[tablename] = await db(tablename).select('*');
  return JSON.stringify(rows);
}
