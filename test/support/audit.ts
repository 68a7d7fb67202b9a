import assert from 'node:assert/strict';
import type { ApiResponse, TestControl } from './control-harness.js';
import { expectStatus } from './control-api.js';

/** What a user reads of the audit log: every event of the owner's account matching `query` (one page of 100). */
export async function auditEvents(control: TestControl, ownerToken: string, query = ''): Promise<any[]> {
  const listed = await control.request('GET', `/account/audit-events?page_size=100${query ? `&${query}` : ''}`, { token: ownerToken });
  expectStatus(listed, 200);
  return listed.body.events;
}

/** The events whose request_id is the X-Request-Id `response` came back with. */
export async function eventsOfResponse(control: TestControl, ownerToken: string, response: ApiResponse): Promise<any[]> {
  const requestId = response.headers.get('x-request-id');
  assert.ok(requestId, 'every response carries X-Request-Id');
  return (await auditEvents(control, ownerToken)).filter((event) => event.request_id === requestId);
}

export interface ExpectedEvent {
  action: string;
  actor: { type: string; id: string | null; email: string | null };
  target: { type: string; id: string | null };
}

/**
 * Asserts that `response` (a change made over HTTP from this host) left exactly one audit
 * event, `expected`, with the response's X-Request-Id and the caller's address; returns it.
 */
export async function expectOneEvent(control: TestControl, ownerToken: string, response: ApiResponse, expected: ExpectedEvent): Promise<any> {
  const events = await eventsOfResponse(control, ownerToken, response);
  assert.equal(events.length, 1, `one event for ${expected.action}: ${JSON.stringify(events)}`);
  const [event] = events;
  assert.match(event.id, /^aud_/);
  assert.equal(event.action, expected.action);
  assert.deepEqual(event.actor, expected.actor);
  assert.deepEqual(event.target, expected.target);
  assert.equal(event.ip, '127.0.0.1');
  assert.ok(!Number.isNaN(Date.parse(event.at)), event.at);
  return event;
}

/** The user acting through a console session, as events name them. */
export const userActor = (user: { id: string; email: string }) => ({ type: 'user', id: user.id, email: user.email });

export const SYSTEM_ACTOR = { type: 'system', id: null, email: null };
