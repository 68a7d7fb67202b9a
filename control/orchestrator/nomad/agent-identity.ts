import type { NomadWorkloadIdentity } from './api-types.js';

/**
 * How a replica on Nomad authenticates to the agent services (issue 37; docs/nomad.md,
 * "Agent services"): with the workload identity Nomad signs for its task, not a token of
 * the platform's. The agent task gets a named identity whose JWT Nomad writes to its
 * secrets directory and renews there before it expires, and the endpoint verifies it
 * against Nomad's public keys (control/crypto/nomad-workload-identity.ts) and maps it to
 * the agent (identity-credential.ts).
 */

/** The identity's name: Nomad writes its JWT to `secrets/nomad_agent-services.jwt`. */
export const AGENT_SERVICES_IDENTITY = 'agent-services';
/** Its audience, which the endpoint requires: a JWT meant for anyone else (Vault, Consul, Nomad's own `nomadproject.io`) is refused. */
export const AGENT_SERVICES_AUDIENCE = 'agent-services';

/**
 * Where the task finds the JWT: identity_hook.go, `setAltToken`, writes a named identity
 * with `File` to `<secrets dir>/nomad_<name>.jwt`, and the client interpolates
 * `${NOMAD_SECRETS_DIR}` in the task's Env (client/taskenv/env.go, `Builder.buildEnv`,
 * `hargs.ReplaceEnv` over the task env with NOMAD_SECRETS_DIR in the map): `/secrets` in a
 * docker task (client/allocrunner/taskrunner/task_dir_hook.go, `setEnvvars`;
 * client/allocdir/fs_unix.go, `TaskSecretsContainerPath`).
 */
export const AGENT_SERVICES_TOKEN_FILE = `\${NOMAD_SECRETS_DIR}/nomad_${AGENT_SERVICES_IDENTITY}.jwt`;

/** What agents on Nomad are given to reach the agent services; null in the driver when they are not offered. */
export interface NomadAgentServices {
  /** NOMAD_AGENT_SERVICES_URL: the listener as agent nodes reach it. */
  url: string;
  /** The identity's TTL: AGENT_SERVICES_TOKEN_TTL_SECONDS, as podman replicas' tokens. */
  tokenTtlSeconds: number;
  /** SESSION_MAX_BYTES, so the runtime trims a session before the API refuses it. */
  maxSessionBytes: number;
}

/**
 * The identity block. A TTL is what makes Nomad renew the JWT (client/widmgr/widmgr.go,
 * `renew`, at about half its life: helper/retry.go, `ExpiryToRenewTime`); Nomad refuses a
 * TTL only on the default identity (nomad/structs/workload_id.go, `Validate`), hence a
 * named one. `ChangeMode` "" is noop: the renewed file is rewritten in place
 * (helper/users/lookup.go, `WriteFileFor`, world-readable when the task names no user)
 * and the runtime reads it again when its stat changes, so no replica restarts for a
 * renewal. Not `Env`: an environment cannot be renewed without a restart.
 */
export const agentServicesIdentity = (ttlSeconds: number): NomadWorkloadIdentity => ({
  Name: AGENT_SERVICES_IDENTITY,
  Audience: [AGENT_SERVICES_AUDIENCE],
  Env: false,
  File: true,
  TTL: ttlSeconds * 1_000_000_000,
  ChangeMode: '',
});

/** The agent services' variables (docs/contract.md), as every podman replica gets them. */
export const agentServicesEnv = (access: NomadAgentServices): Record<string, string> => ({
  AGENT_SERVICES_URL: access.url,
  AGENT_SERVICES_TOKEN_FILE: AGENT_SERVICES_TOKEN_FILE,
  SESSION_MAX_BYTES: String(access.maxSessionBytes),
});
