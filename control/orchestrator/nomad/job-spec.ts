import { DEFAULT_CAPABILITIES } from '../podman/run-args.js';
import type { JobSpec } from '../types.js';
import type { NomadJob, NomadScalingPolicy, NomadTemplate } from './api-types.js';
import type { NomadSettings } from './settings.js';

export const GROUP = 'agent';
export const TASK = 'agent';
export const PORT_LABEL = 'http';

export const jobId = (agentId: string) => `agent-${agentId}`;
export const serviceName = (agentId: string) => `agent-${agentId}`;
export const variablePath = (agentId: string) => `nomad/jobs/agent-${agentId}`;
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
    ChangeMode: 'restart',
  };
}

/**
 * Nomad refuses a group whose count lies outside its scaling Min/Max, while our API lets
 * an owner scale to 0 or past min_replicas by hand: the range is widened to include the
 * count, so a manual scale is never refused, and the autoscaler works within it.
 */
export function scalingBlock(spec: Pick<JobSpec, 'count' | 'scaling'>): NomadScalingPolicy {
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
              strategy: [{ 'target-value': [{ target: 70 }] }],
            },
          ],
        },
      ],
    },
  };
}

/**
 * The Nomad job of one agent (DESIGN.md §5): a service job with one group and one
 * docker task, the same container limits as the podman driver, a Consul service whose
 * check gates rolling deploys, and secrets only through the Variable's template.
 */
export function nomadJobFor(spec: JobSpec, settings: NomadSettings): NomadJob {
  const hasSecrets = Object.keys(spec.secretEnv).length > 0;
  const meta = { agent_id: spec.agentId, agent_version: String(spec.version) };
  return {
    ID: jobId(spec.agentId),
    Name: jobId(spec.agentId),
    Type: 'service',
    Namespace: settings.namespace,
    ...(settings.region ? { Region: settings.region } : {}),
    Datacenters: [...settings.datacenters],
    Meta: meta,
    TaskGroups: [
      {
        Name: GROUP,
        Count: spec.count,
        Networks: [{ Mode: 'host', DynamicPorts: [{ Label: PORT_LABEL, Value: 0, To: spec.port }] }],
        Services: [
          {
            Name: serviceName(spec.agentId),
            Tags: [`agent-id=${spec.agentId}`, `slug=${spec.slug}`, `version=${spec.version}`],
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
          AutoRevert: true,
          Canary: 0,
        },
        ShutdownDelay: ms(settings.shutdownDelayMs),
        Scaling: scalingBlock(spec),
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
              security_opt: ['no-new-privileges'],
              pids_limit: 512,
              cpu_hard_limit: true,
            },
            Env: { ...spec.env },
            ...(hasSecrets ? { Templates: [secretTemplate(spec.agentId)] } : {}),
            Resources: { CPU: cpuMhz(spec.cpu, settings), MemoryMB: spec.memoryMb },
            KillTimeout: ms(settings.killTimeoutMs),
            Meta: meta,
          },
        ],
      },
    ],
  };
}
