import { EnvParseError, parseEnvFile } from '../upstream/go-envparse.js';

type Json = Record<string, any>;

export type SecretsOutcome = { values: Map<string, string> } | { failure: string } | { stopped: true };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A task's `secret` blocks as Nomad's secrets hook plays them before the task starts
 * (client/allocrunner/taskrunner/secrets_hook.go, `Prestart`; Nomad 1.11+). For each
 * provider "nomad" secret, secrets/nomad_provider.go `BuildTemplate` renders
 *
 *     {{ with nomadVar "<path>@<namespace>" }}{{ range $k, $v := . }}secret.<name>.{{ $k }}={{ $v }}{{ end }}{{ end }}
 *
 * (with its newlines and tabs), in memory, waiting while the Variable does not exist as
 * every template does; text/template ranges a map in key order and prints each item's
 * value as it is. The hook reads all of it with go-envparse and hands the pairs to the
 * task's interpolation only (taskenv.Builder `SetSecrets`), not to its environment. Other
 * providers (vault, plugins) are not ported: the task fails, saying so.
 */
export async function resolveTaskSecrets(task: Json, lookup: (path: string) => Readonly<Record<string, string>> | undefined, stopped: () => boolean): Promise<SecretsOutcome> {
  let contents = '';
  for (const secret of (task.Secrets ?? []) as Json[]) {
    if (secret.Provider !== 'nomad') return { failure: `the fake has no secret provider ${JSON.stringify(secret.Provider)}` };
    let items: Readonly<Record<string, string>> | undefined;
    while (!(items = lookup(String(secret.Path)))) {
      if (stopped()) return { stopped: true };
      await sleep(200);
    }
    let rendered = '\n\t\t\n\t\t';
    for (const key of Object.keys(items).sort()) rendered += `\n\t\tsecret.${secret.Name}.${key}=${items[key]}\n\t\t`;
    contents += `${rendered}\n\t\t`;
  }
  try {
    return { values: parseEnvFile(Buffer.from(contents)) };
  } catch (error) {
    if (!(error instanceof EnvParseError)) throw error;
    return { failure: error.message };
  }
}

/**
 * The docker driver config after the task runner's interpolation
 * (client/allocrunner/taskrunner/task_runner.go, `runDriver`: `hclutils.ParseHclInterface`
 * with `AllValues`), for the one form the platform writes: a string that is exactly
 * `${secret.<name>.<key>}`. Any other `${` is not ported; a reference to a secret that
 * does not exist fails as HCL's "Unsupported attribute" does, in a "Failed Validation".
 */
export function interpolateDriverConfig(config: Json, secrets: Map<string, string>): { config: Json } | { failure: string } {
  let failure: string | null = null;
  const visit = (value: unknown): unknown => {
    if (typeof value === 'string' && value.includes('${')) {
      const reference = /^\$\{(secret\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+)\}$/.exec(value);
      if (!reference) {
        failure ??= `the fake interpolates only \${secret.<name>.<key>}, not ${JSON.stringify(value)}`;
        return value;
      }
      const resolved = secrets.get(reference[1]!);
      if (resolved === undefined) failure ??= `failed to parse config: Unsupported attribute: This object does not have an attribute named "${reference[1]!.split('.').pop()}".`;
      return resolved ?? value;
    }
    if (Array.isArray(value)) return value.map(visit);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, visit(item)]));
    return value;
  };
  const interpolated = visit(config) as Json;
  return failure === null ? { config: interpolated } : { failure };
}

/** What the docker driver would pull with from the task config (drivers/docker/utils.go, `authFromTaskConfig`): null when every field is empty. */
export interface DockerRegistryAuth {
  Username: string;
  Password: string;
  ServerAddress: string;
}

export function authFromTaskConfig(config: Json): DockerRegistryAuth | null {
  const auth = ((Array.isArray(config.auth) ? config.auth[0] : config.auth) ?? {}) as Json;
  const found = { Username: String(auth.username ?? ''), Password: String(auth.password ?? ''), ServerAddress: String(auth.server_address ?? '') };
  return found.Username === '' && found.Password === '' && found.ServerAddress === '' ? null : found;
}
