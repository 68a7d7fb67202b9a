import assert from 'node:assert/strict';
import type { TestControl } from './control-harness.js';

/** What the agent services endpoint answers to a write (control/schemas/agent-sessions.ts, SessionWritten). */
export interface WrittenSession {
  session_id: string;
  version: number;
  size_bytes: number;
  expires_at: string;
}

/**
 * Writes a conversation as the agent's replica would (docs/contract.md, "Sessions API v1"):
 * each turn appended in order through the agent services endpoint with a replica token, each
 * at the version the one before left. Returns the last write's answer.
 */
export async function writeSession(control: TestControl, agentId: string, sessionId: string, turns: unknown[][]): Promise<WrittenSession> {
  const token = control.mintAgentToken(agentId);
  let written: WrittenSession | undefined;
  for (const messages of turns) {
    const response = await fetch(`${control.agentServicesUrl}/v1/sessions/${encodeURIComponent(sessionId)}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ expected_version: written?.version ?? 0, messages }),
    });
    const text = await response.text();
    assert.equal(response.status, 200, `append to ${sessionId}: ${response.status} ${text}`);
    written = JSON.parse(text) as WrittenSession;
  }
  assert.ok(written, 'a session is written in one turn at least');
  return written;
}

/** A replica's read of the session: its status (404 once deleted). */
export async function replicaReadStatus(control: TestControl, agentId: string, sessionId: string): Promise<number> {
  const response = await fetch(`${control.agentServicesUrl}/v1/sessions/${encodeURIComponent(sessionId)}`, { headers: { authorization: `Bearer ${control.mintAgentToken(agentId)}` } });
  await response.arrayBuffer();
  return response.status;
}
