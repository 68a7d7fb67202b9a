import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENV_REFERENCE } from './validate/server-mutate.js';

type Json = Record<string, any>;

/** Where a docker task sees its secrets directory (client/allocdir/fs_unix.go, `TaskSecretsContainerPath`). */
export const SECRETS_MOUNT = '/secrets';

/** What the client's widmgr waits at least before a renewal (client/widmgr/widmgr.go, `NewWIDMgr`: `minWait` 10 s). */
const MIN_RENEW_WAIT_MS = 10_000;

/**
 * helper/retry.go, `ExpiryToRenewTime`: half the time left, plus up to a tenth of that at
 * random (helper/funcs.go, `RandomStagger`); the minimum wait when that is shorter.
 */
export function renewAfterMs(expiresAtMs: number, nowMs: number): number {
  const half = (expiresAtMs - nowMs) / 2;
  if (half < MIN_RENEW_WAIT_MS) return MIN_RENEW_WAIT_MS + Math.random() * (MIN_RENEW_WAIT_MS / 10);
  return half + Math.random() * (half / 10);
}

/**
 * A task's named identities as the client's identity hook plays them for a task the fake
 * runs in a container (client/allocrunner/taskrunner/identity_hook.go): before the task
 * starts, each identity with `File` is written to `<secrets dir>/nomad_<name>.jwt`
 * (`setAltToken`; `Filepath` is not ported) as `os.WriteFile` writes it, in place
 * (helper/users/lookup.go, `WriteFileFor`: no task user, so mode 0666), then written again
 * each time widmgr renews it, at about half its life (client/widmgr/widmgr.go, `renew`).
 * `Env` identities are not ported.
 */
export class TaskIdentityFiles {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    /** The task's secrets directory on this host, mounted at SECRETS_MOUNT. */
    readonly directory: string,
    /** A fresh JWT for the named identity, and when it expires (ms), as the server signs it. */
    private readonly sign: (identity: Json) => { jwt: string; expiresAtMs: number | null },
  ) {
    mkdirSync(directory, { recursive: true, mode: 0o777 });
  }

  start(identities: Json[]): void {
    for (const identity of identities) if (identity.File) this.write(identity);
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    rmSync(this.directory, { recursive: true, force: true });
  }

  private write(identity: Json): void {
    const { jwt, expiresAtMs } = this.sign(identity);
    writeFileSync(join(this.directory, `nomad_${identity.Name}.jwt`), jwt, { mode: 0o666 });
    if (expiresAtMs === null) return; // no TTL: never renewed
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.write(identity);
    }, renewAfterMs(expiresAtMs, Date.now()));
    timer.unref();
    this.timers.add(timer);
  }
}

/**
 * The task's Env as the client hands it to the driver (client/taskenv/env.go,
 * `Builder.buildEnv`): each value interpolated by helper/args/args.go, `ReplaceEnv`, over
 * the variables the client sets, of which the fake ports the task's directories and ids
 * (client/allocrunner/taskrunner/task_dir_hook.go, `setEnvvars`: `/alloc`, `/local`,
 * `/secrets` in a docker task); a reference to any other name is left as it is, as Nomad
 * leaves one it does not know.
 */
export function interpolateTaskEnv(env: Record<string, string>, variables: Record<string, string>): Record<string, string> {
  const replace = (value: string) => value.replace(ENV_REFERENCE, (reference) => variables[reference.slice(2, -1)] ?? reference);
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, replace(value)]));
}

/** The client's own task variables the fake knows (client/taskenv/env.go: AllocDir, TaskLocalDir, SecretsDir, AllocID, JobID, TaskName, GroupName, Namespace). */
export function taskVariables(alloc: Json, task: Json): Record<string, string> {
  return {
    NOMAD_ALLOC_DIR: '/alloc',
    NOMAD_TASK_DIR: '/local',
    NOMAD_SECRETS_DIR: SECRETS_MOUNT,
    NOMAD_ALLOC_ID: alloc.ID,
    NOMAD_JOB_ID: alloc.JobID,
    NOMAD_GROUP_NAME: alloc.TaskGroup,
    NOMAD_TASK_NAME: task.Name,
    NOMAD_NAMESPACE: alloc.Namespace,
  };
}
