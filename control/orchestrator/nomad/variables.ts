import type { NomadVariable } from './api-types.js';
import type { ApiClient } from './http-client.js';
import { variablePath } from './job-spec.js';

const path = (agentId: string) => `/v1/var/${variablePath(agentId)}`;

/**
 * The agent's secret env as the Nomad Variable its template reads. Written BEFORE the job
 * is registered: a template that reads a missing Variable blocks the task. Nomad refuses
 * an empty Variable, so with no secret the Variable is deleted instead (and the job has
 * no template, see job-spec.ts).
 */
export async function writeSecrets(nomad: ApiClient, agentId: string, secretEnv: Record<string, string>, namespace: string): Promise<void> {
  if (Object.keys(secretEnv).length === 0) return;
  const variable: NomadVariable = { Namespace: namespace, Path: variablePath(agentId), Items: { ...secretEnv } };
  await nomad.json('PUT', path(agentId), { query: { namespace }, body: variable });
}

/** Removes the Variable; one that does not exist is fine (no secrets, or already gone). */
export async function deleteSecrets(nomad: ApiClient, agentId: string, namespace: string): Promise<void> {
  await nomad.json('DELETE', path(agentId), { query: { namespace }, allowNotFound: true });
}
