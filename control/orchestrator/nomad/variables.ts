import type { NomadVariable } from './api-types.js';
import type { ApiClient } from './http-client.js';
import type { RegistryCredential } from '../../domain/registry-auth.js';
import { registryVariableItems, registryVariablePath, variablePath } from './job-spec.js';

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

const registryPath = (agentId: string) => `/v1/var/${registryVariablePath(agentId)}`;

/**
 * The agent's registry credentials as the Variable its task's `secret` block reads
 * (job-spec.ts, `registryAuthParts`): written before the job, like the secret env's.
 */
export async function writeRegistryAuth(nomad: ApiClient, agentId: string, credential: RegistryCredential | undefined, namespace: string): Promise<void> {
  if (!credential || 'identityToken' in credential) return;
  const variable: NomadVariable = { Namespace: namespace, Path: registryVariablePath(agentId), Items: registryVariableItems(credential) };
  await nomad.json('PUT', registryPath(agentId), { query: { namespace }, body: variable });
}

/** Removes the registry Variable; one that does not exist is fine. */
export async function deleteRegistryAuth(nomad: ApiClient, agentId: string, namespace: string): Promise<void> {
  await nomad.json('DELETE', registryPath(agentId), { query: { namespace }, allowNotFound: true });
}
