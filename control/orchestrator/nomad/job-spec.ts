import { DEFAULT_CAPABILITIES, NO_NEW_PRIVILEGES, PIDS_LIMIT } from '../container-policy.js';
import type { JobSpec } from '../../domain/job.js';
import type { DockerAuth, NomadJob, NomadJobRead, NomadScalingPolicy, NomadSecret, NomadTemplate } from './api-types.js';
import type { NomadSettings } from './settings.js';
import { agentServicesEnv, agentServicesIdentity, type NomadAgentServices } from './agent-identity.js';

export const GROUP = 'agent';
export const TASK = 'agent';
export const PORT_LABEL = 'http';

export const jobId = (agentId: string) => `agent-${agentId}`;
/**
 * The Consul service of an agent. Not `agent-<agent id>`: ids hold `_`, and Nomad refuses
 * any service name that is not an RFC 1123 label of letters, digits and dashes, at most 63
 * characters (nomad/structs/services.go, `Service.ValidateName`). The slug is such a label
 * (control/domain/slug.ts: lower-case, at most 49 characters), unique in Postgres and
 * already lower-case, so two agents never differ only by case, which Consul DNS ignores.
 */
export const serviceName = (slug: string) => `agent-${slug}`;
/**
 * Every agent service carries this tag: the driver follows all agents' health with one
 * Consul query filtered on it (consul-watch.ts) instead of one watch per agent.
 */
export const AGENT_SERVICE_TAG = 'platform-agent';
/**
 * The tag a canary allocation's service carries beside the others: Nomad registers a
 * canary with the service's CanaryTags instead of its Tags, whole
 * (command/agent/consul/service_client.go, `serviceRegs`), so those repeat every tag,
 * AGENT_SERVICE_TAG first, or the health watch would not see canaries at all.
 */
export const CANARY_TAG = 'canary';
export const variablePath = (agentId: string) => `nomad/jobs/agent-${agentId}`;
/**
 * The Variable with the agent's registry credentials: beside the secret env's, not in it,
 * since every item of that one becomes an environment variable of the container. A task's
 * workload identity reads exactly `nomad/jobs/<job>`, `…/<group>` and `…/<group>/<task>`
 * (acl/acl.go, `matchingVariablesCapabilitySet`): this is the task's.
 */
export const registryVariablePath = (agentId: string) => `nomad/jobs/${jobId(agentId)}/${GROUP}/${TASK}`;
/** The task's `secret` block that reads it: its items are `${secret.registry.username}` and `${secret.registry.password}`. */
export const REGISTRY_SECRET = 'registry';
/** The agent id of a job we own, or null for any other job (the prefix list may return others). */
export const agentIdOf = (id: string) => (/^agent-[A-Za-z0-9_-]+$/.test(id) ? id.slice('agent-'.length) : null);

const ms = (milliseconds: number) => Math.round(milliseconds) * 1_000_000;
const SECOND = 1000;

/** vCPU → Nomad MHz (at least 1: Nomad refuses 0). */
export const cpuMhz = (cpu: number, settings: Pick<NomadSettings, 'mhzPerVcpu'>) => Math.max(1, Math.round(cpu * settings.mhzPerVcpu));

/**
 * Renders the Variable's items as `KEY=<JSON string>` lines into secrets/agent.env,
 * which Nomad loads as environment (Envvars): the values never sit in the job.
 */
export function secretTemplate(agentId: string): NomadTemplate {
  return {
    EmbeddedTmpl: `{{ with nomadVar "${variablePath(agentId)}" }}{{ range .Tuples }}{{ .K }}={{ .V | toJSON }}\n{{ end }}{{ end }}`,
    DestPath: 'secrets/agent.env',
    Envvars: true,
    // Not "restart": a Variable write re-renders the template in every allocation at once,
    // and "restart" would restart them all within the splay, outside the update block's
    // max_parallel. The job's Meta carries the agent version, so a redeploy that changes
    // secrets is a new job version and rolls one replica at a time like any other
    // (scheduler/util.go, `tasksUpdated`, compares the combined task Meta); old replicas
    // keep the environment they started with until they are replaced.
    ChangeMode: 'noop',
  };
}

/**
 * How the docker driver gets the agent's registry credentials without the job holding
 * them (docs/decisions.md, "Registry credentials on Nomad"): the driver takes per-task
 * credentials only from the task config's `auth` block (drivers/docker/driver.go,
 * `resolveRegistryAuthentication`, tries `authFromTaskConfig` first; the plugin's `auth
 * { config, helper }` is one per client, keyed by registry host, not per agent). The
 * block holds only references to a `secret` block, which the client's secrets hook fills
 * from the Variable at registryVariablePath before the driver config is interpolated
 * (client/allocrunner/taskrunner/task_runner.go, `runDriver`: `AllValues` includes the
 * task secrets). Unlike a template with `env = true`, a secret is not put in the
 * container's environment. Nomad 1.11 or later (the secrets hook's first release).
 */
export function registryAuthParts(spec: Pick<JobSpec, 'agentId' | 'registryAuth'>): { secrets: NomadSecret[]; auth: DockerAuth[] } | null {
  const credential = spec.registryAuth;
  if (!credential) return null;
  if ('identityToken' in credential) {
    // authFromTaskConfig (drivers/docker/utils.go) copies Username, Password and ServerAddr only.
    throw new Error("registry_auth.identity_token cannot reach Nomad's docker driver, whose task auth takes a user name and password only");
  }
  const ref = (item: string) => `\${secret.${REGISTRY_SECRET}.${item}}`;
  return {
    secrets: [{ Name: REGISTRY_SECRET, Provider: 'nomad', Path: registryVariablePath(spec.agentId) }],
    auth: [{ username: ref('username'), password: ref('password'), server_address: credential.registry }],
  };
}

/** Whether a job as Nomad holds it reads the registry Variable (its task has the `secret` block). */
export function readsRegistrySecret(job: NomadJobRead): boolean {
  return job.TaskGroups.some((group) =>
    ((group.Tasks ?? []) as { Secrets?: { Name?: string }[] | null }[]).some((task) => (task.Secrets ?? []).some((secret) => secret.Name === REGISTRY_SECRET)),
  );
}

/**
 * The registry Variable's items. The secrets hook renders each as `secret.registry.<k>=<v>`
 * with the value as it is (secrets/nomad_provider.go, `BuildTemplate`) and reads the lines
 * with go-envparse: stored JSON-quoted, a value with spaces, `#`, quotes or a backslash
 * comes back unchanged, as the secret env's do (secretTemplate's `toJSON`).
 */
export function registryVariableItems(credential: { username: string; password: string }): Record<string, string> {
  return { username: JSON.stringify(credential.username), password: JSON.stringify(credential.password) };
}

/**
 * Nomad refuses a group whose count lies outside its scaling Min/Max, while our API lets
 * an owner scale to 0 or past min_replicas by hand: the range is widened to include the
 * count, so a manual scale is never refused, and the autoscaler works within it.
 */
export function scalingBlock(spec: Pick<JobSpec, 'count' | 'scaling'>, settings: Pick<NomadSettings, 'scalingTargetCpuPercent'>): NomadScalingPolicy {
  return {
    Type: 'horizontal',
    Min: Math.min(spec.scaling.min, spec.count),
    Max: Math.max(spec.scaling.max, spec.count),
    Enabled: spec.scaling.enabled,
    // HCL-style: each block is a list of one object, as the autoscaler's JSON parser expects.
    Policy: {
      cooldown: '1m',
      evaluation_interval: '30s',
      check: [
        {
          cpu: [
            {
              source: 'nomad-apm',
              query: 'avg_cpu-allocated',
              strategy: [{ 'target-value': [{ target: settings.scalingTargetCpuPercent }] }],
            },
          ],
        },
      ],
    },
  };
}

/**
 * What the Nomad UI shows an operator in the job list: the agent's name and slug, so
 * "support bot is slow" leads to the job without the control API. Nomad refuses only an
 * empty name or one with a NUL (nomad/structs/structs.go, `Job.Validate`).
 */
export const jobName = (spec: Pick<JobSpec, 'name' | 'slug'>) => `${spec.name.replace(/\0/g, '')} (${spec.slug})`.trim();

/** The job's Meta, and every group's and task's: from the job to the agent, and back. */
export function operatorMeta(spec: JobSpec): Record<string, string> {
  return {
    agent_id: spec.agentId,
    agent_name: spec.name,
    slug: spec.slug,
    account_id: spec.accountId,
    url: spec.url,
    agent_version: String(spec.version),
  };
}

/**
 * The group's count: the agent's replicas, which the stable version keeps while a canary
 * runs (JobSpec.stable). Nomad's canaries come on top of the count, as the update block's
 * `canary`; promotion then replaces the old allocations up to the count.
 */
export const groupCount = (spec: Pick<JobSpec, 'count' | 'stable'>) => spec.stable?.count ?? spec.count;

/** The canaries a job asks for: the canary's replicas while one runs, none otherwise. */
export const canaryCount = (spec: Pick<JobSpec, 'count' | 'stable'>) => (spec.stable ? spec.count : 0);

/** The canaries a job as Nomad holds it asks for (its group's update block). */
export const canariesOf = (job: NomadJobRead): number =>
  (job.TaskGroups.find((group) => group.Name === GROUP)?.Update as { Canary?: number } | null | undefined)?.Canary ?? 0;

/**
 * The Nomad job of one agent (docs/nomad.md, "The job"): a service job with one group and one
 * docker task, the container policy both drivers apply (../container-policy.ts), a Consul service whose
 * check gates rolling deploys, and secrets only through the Variable's template. A canary
 * spec (JobSpec.stable) is the canary's version with Nomad's own canaries: `canary` of them
 * beside the stable allocations, which Nomad keeps until the deployment is promoted or
 * failed (docs/nomad.md, "Canary deploys"). With `agentServices`, the task gets the
 * agent services' variables and the workload identity it authenticates with
 * (agent-identity.ts); without, the replicas keep conversations in memory.
 */
export function nomadJobFor(spec: JobSpec, settings: NomadSettings, agentServices: NomadAgentServices | null = null): NomadJob {
  const hasSecrets = Object.keys(spec.secretEnv).length > 0;
  const registry = registryAuthParts(spec);
  const meta = operatorMeta(spec);
  const count = groupCount(spec);
  const tags = [AGENT_SERVICE_TAG, `agent-id=${spec.agentId}`, `slug=${spec.slug}`, `version=${spec.version}`];
  return {
    ID: jobId(spec.agentId),
    Name: jobName(spec),
    Type: 'service',
    Namespace: settings.namespace,
    ...(settings.region ? { Region: settings.region } : {}),
    Datacenters: [...settings.datacenters],
    // Agents run untrusted code: only nodes in this pool, which the operator keeps away
    // from Postgres, Redis, Nomad and Consul (docs/nomad.md, "Agent nodes").
    NodePool: settings.agentNodePool,
    Meta: meta,
    TaskGroups: [
      {
        Name: GROUP,
        Count: count,
        Networks: [{ Mode: 'host', DynamicPorts: [{ Label: PORT_LABEL, Value: 0, To: spec.port }] }],
        Services: [
          {
            Name: serviceName(spec.slug),
            Tags: tags,
            CanaryTags: [...tags, CANARY_TAG],
            PortLabel: PORT_LABEL,
            Provider: 'consul',
            Checks: [
              spec.check === 'http'
                ? { Name: 'health', Type: 'http', Path: '/health', Interval: ms(5 * SECOND), Timeout: ms(2 * SECOND) }
                : { Name: 'port', Type: 'tcp', Interval: ms(5 * SECOND), Timeout: ms(2 * SECOND) },
            ],
          },
        ],
        // The podman driver's budget: `restartBudget` restarts, then the replica is crashed.
        RestartPolicy: { Attempts: settings.restartBudget, Interval: ms(settings.restartIntervalMs), Delay: ms(settings.restartDelayMs), Mode: 'fail' },
        // No rescheduling: a service job's default retries forever, so a broken image would never end as failed.
        ReschedulePolicy: { Attempts: 0, Interval: 0, Delay: ms(30 * SECOND), DelayFunction: 'constant', MaxDelay: 0, Unlimited: false },
        Update: {
          MaxParallel: 1,
          HealthCheck: 'checks',
          MinHealthyTime: ms(settings.minHealthyTimeMs),
          HealthyDeadline: ms(settings.healthyDeadlineMs),
          ProgressDeadline: ms(settings.progressDeadlineMs),
          // Also what an abort relies on: failing the canary's deployment re-registers the
          // latest stable version (deployment_watcher.go, `FailDeployment`).
          AutoRevert: true,
          Canary: canaryCount(spec),
          // The platform promotes, by hand or from the canary's figures (issue 36), never Nomad on health alone.
          AutoPromote: false,
        },
        ShutdownDelay: ms(settings.shutdownDelayMs),
        Scaling: scalingBlock({ count, scaling: spec.scaling }, settings),
        Meta: meta,
        Tasks: [
          {
            Name: TASK,
            Driver: 'docker',
            Config: {
              image: spec.image,
              ports: [PORT_LABEL],
              cap_drop: ['ALL'],
              cap_add: [...DEFAULT_CAPABILITIES],
              security_opt: [NO_NEW_PRIVILEGES],
              pids_limit: PIDS_LIMIT,
              cpu_hard_limit: true,
              ...(registry ? { auth: registry.auth } : {}),
            },
            Env: { ...spec.env, ...(agentServices ? agentServicesEnv(agentServices) : {}) },
            ...(hasSecrets ? { Templates: [secretTemplate(spec.agentId)] } : {}),
            ...(registry ? { Secrets: registry.secrets } : {}),
            ...(agentServices ? { Identities: [agentServicesIdentity(agentServices.tokenTtlSeconds)] } : {}),
            Resources: { CPU: cpuMhz(spec.cpu, settings), MemoryMB: spec.memoryMb },
            KillTimeout: ms(settings.killTimeoutMs),
            Meta: meta,
          },
        ],
      },
    ],
  };
}
