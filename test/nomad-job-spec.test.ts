import assert from 'node:assert/strict';
import { cpuMhz, nomadJobFor, secretTemplate } from '../control/orchestrator/nomad/job-spec.js';
import { LOCAL_RUNTIME_IMAGE } from '../control/config/runtime-image.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';

const SECOND_NS = 1_000_000_000;

describe('nomad driver: the job of an agent', () => {
  const settings = defaultNomadSettings();

  it('is a service job agent-<id> with one group and one docker task, in the configured namespace, datacenters and agent node pool', () => {
    const job = nomadJobFor(sampleSpec(), defaultNomadSettings({ NOMAD_NAMESPACE: 'agents', NOMAD_DATACENTERS: 'eu1, eu2', NOMAD_REGION: 'europe' }));
    assert.equal(job.ID, 'agent-agt_7Qm2XbR9kLp4TzW1nVc8');
    assert.equal(job.Type, 'service');
    assert.equal(job.Namespace, 'agents');
    assert.equal(job.Region, 'europe');
    assert.deepEqual(job.Datacenters, ['eu1', 'eu2']);
    assert.equal(job.NodePool, 'agents', 'agents never share nodes with the platform by default');
    assert.equal(nomadJobFor(sampleSpec(), defaultNomadSettings({ NOMAD_AGENT_NODE_POOL: 'untrusted' })).NodePool, 'untrusted');
    assert.deepEqual(job.TaskGroups.map((g) => g.Name), ['agent']);
    assert.deepEqual(job.TaskGroups[0]!.Tasks.map((t) => [t.Name, t.Driver]), [['agent', 'docker']]);
    assert.equal('Region' in nomadJobFor(sampleSpec(), settings), false, 'no region unless NOMAD_REGION is set');
  });

  it('shows an operator in the Nomad UI whose job it is: the name and slug, and Meta leading back to the agent', () => {
    const job = nomadJobFor(sampleSpec(), settings);
    assert.equal(job.Name, 'Support bot (support-bot-x7k2p9qa)');
    const meta = {
      agent_id: 'agt_7Qm2XbR9kLp4TzW1nVc8',
      agent_name: 'Support bot',
      slug: 'support-bot-x7k2p9qa',
      account_id: 'acc_3Jd8Kq1ZrT5mWn2Vb7Xc',
      url: 'https://support-bot-x7k2p9qa.agents.example.com',
      agent_version: '3',
    };
    assert.deepEqual(job.Meta, meta);
    assert.deepEqual(job.TaskGroups[0]!.Meta, meta);
    assert.deepEqual(job.TaskGroups[0]!.Tasks[0]!.Meta, meta);
    assert.equal(nomadJobFor(sampleSpec({ name: 'nul\u0000name' }), settings).Name, 'nulname (support-bot-x7k2p9qa)', 'Nomad refuses a NUL in a job name');
  });

  it('runs count replicas behind a dynamic port mapped to deploy.port', () => {
    const group = nomadJobFor(sampleSpec({ count: 4, port: 3000 }), settings).TaskGroups[0]!;
    assert.equal(group.Count, 4);
    assert.deepEqual(group.Networks, [{ Mode: 'host', DynamicPorts: [{ Label: 'http', Value: 0, To: 3000 }] }]);
    assert.deepEqual(group.Tasks[0]!.Config.ports, ['http']);
  });

  it('limits the container as the podman driver does: default capabilities only, no new privileges, 512 pids, hard cpu and memory', () => {
    const task = nomadJobFor(sampleSpec({ cpu: 0.5, memoryMb: 384 }), defaultNomadSettings({ NOMAD_MHZ_PER_VCPU: '2400' })).TaskGroups[0]!.Tasks[0]!;
    assert.deepEqual(task.Config, {
      image: LOCAL_RUNTIME_IMAGE,
      ports: ['http'],
      cap_drop: ['ALL'],
      cap_add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'],
      security_opt: ['no-new-privileges'],
      pids_limit: 512,
      cpu_hard_limit: true,
    });
    assert.deepEqual(task.Resources, { CPU: 1200, MemoryMB: 384 });
    assert.equal(cpuMhz(0.25, { mhzPerVcpu: 1000 }), 250);
    assert.equal(cpuMhz(0.0001, { mhzPerVcpu: 1000 }), 1, 'never 0 MHz, which Nomad refuses');
  });

  it('puts plain env in Env and never a secret value; the template reads the Variable only when secrets exist', () => {
    const spec = sampleSpec({ secretEnv: { OPENAI_API_KEY: 'sk-sample-not-a-real-key', WEBHOOK_SECRET: 'whsec-1' } });
    const job = nomadJobFor(spec, settings);
    const task = job.TaskGroups[0]!.Tasks[0]!;
    assert.deepEqual(task.Env, spec.env);
    const serialized = JSON.stringify(job);
    assert.equal(serialized.includes('sk-sample-not-a-real-key'), false, 'the model key is nowhere in the job');
    assert.equal(serialized.includes('whsec-1'), false);
    assert.deepEqual(task.Templates, [
      {
        EmbeddedTmpl: '{{ with nomadVar "nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8" }}{{ range .Tuples }}{{ .K }}={{ .V | toJSON }}\n{{ end }}{{ end }}',
        DestPath: 'secrets/agent.env',
        Envvars: true,
        ChangeMode: 'noop',
      },
    ]);
    assert.deepEqual(secretTemplate('x'), { ...task.Templates![0]!, EmbeddedTmpl: task.Templates![0]!.EmbeddedTmpl.replace('agt_7Qm2XbR9kLp4TzW1nVc8', 'x') });

    const withoutSecrets = nomadJobFor(sampleSpec({ secretEnv: {} }), settings).TaskGroups[0]!.Tasks[0]!;
    assert.equal('Templates' in withoutSecrets, false, 'a template on a missing Variable would block the task');
  });

  it('registers a Consul service named from the slug (an agent id holds "_", which Nomad refuses), with the platform, agent id, slug and version tags', () => {
    const [service] = nomadJobFor(sampleSpec(), settings).TaskGroups[0]!.Services;
    assert.deepEqual(service, {
      Name: 'agent-support-bot-x7k2p9qa',
      Tags: ['platform-agent', 'agent-id=agt_7Qm2XbR9kLp4TzW1nVc8', 'slug=support-bot-x7k2p9qa', 'version=3'],
      // What a canary allocation registers instead: every tag (the health watch filters on the first), and `canary`.
      CanaryTags: ['platform-agent', 'agent-id=agt_7Qm2XbR9kLp4TzW1nVc8', 'slug=support-bot-x7k2p9qa', 'version=3', 'canary'],
      PortLabel: 'http',
      Provider: 'consul',
      Checks: [{ Name: 'health', Type: 'http', Path: '/health', Interval: 5 * SECOND_NS, Timeout: 2 * SECOND_NS }],
    });
    const custom = nomadJobFor(sampleSpec({ check: 'tcp', image: 'ghcr.io/acme/bot:2' }), settings).TaskGroups[0]!.Services[0]!;
    assert.deepEqual(custom.Checks, [{ Name: 'port', Type: 'tcp', Interval: 5 * SECOND_NS, Timeout: 2 * SECOND_NS }]);
  });

  it("spends the podman driver's restart budget, never reschedules forever, and rolls out health-gated with auto-revert", () => {
    const group = nomadJobFor(sampleSpec(), defaultNomadSettings({ RESTART_BUDGET: '3', RESTART_BACKOFF_BASE_MS: '2000', DRAIN_SECONDS: '4', STOP_TIMEOUT_SECONDS: '7' })).TaskGroups[0]!;
    assert.deepEqual(group.RestartPolicy, { Attempts: 3, Interval: 1800 * SECOND_NS, Delay: 2 * SECOND_NS, Mode: 'fail' });
    assert.equal(group.ReschedulePolicy.Unlimited, false);
    assert.equal(group.ReschedulePolicy.Attempts, 0);
    assert.deepEqual(group.Update, {
      MaxParallel: 1,
      HealthCheck: 'checks',
      MinHealthyTime: 10 * SECOND_NS,
      HealthyDeadline: 300 * SECOND_NS,
      ProgressDeadline: 600 * SECOND_NS,
      AutoRevert: true,
      Canary: 0,
      AutoPromote: false,
    });
    assert.equal(group.ShutdownDelay, 4 * SECOND_NS);
    assert.equal(group.Tasks[0]!.KillTimeout, 7 * SECOND_NS);
    for (const value of [group.RestartPolicy.Interval, group.RestartPolicy.Delay, group.ShutdownDelay, group.Update.MinHealthyTime]) {
      assert.ok(Number.isInteger(value), 'durations are integer nanoseconds');
    }
  });

  it("a canary's job: the canary's version with Nomad canaries of its replicas, the stable version's count, never promoted by Nomad", () => {
    const stable = sampleSpec({ version: 3, count: 2, image: 'ghcr.io/acme/bot:3' });
    const job = nomadJobFor({ ...sampleSpec({ version: 4, count: 1, image: 'ghcr.io/acme/bot:4' }), stable }, settings);
    const group = job.TaskGroups[0]!;
    assert.equal(group.Count, 2);
    assert.deepEqual([group.Update.Canary, group.Update.AutoPromote, group.Update.AutoRevert], [1, false, true]);
    assert.equal(group.Tasks[0]!.Config.image, 'ghcr.io/acme/bot:4');
    assert.equal(job.Meta.agent_version, '4');
    assert.deepEqual([group.Scaling.Min, group.Scaling.Max], [1, 5], 'the range holds the stable count');
  });

  it('gives the autoscaler a scaling block with Enabled sent explicitly and HCL-style lists, widened to include the count', () => {
    const off = nomadJobFor(sampleSpec({ scaling: { enabled: false, min: 1, max: 5 } }), settings).TaskGroups[0]!.Scaling;
    assert.equal(off.Enabled, false);
    assert.equal(off.Type, 'horizontal');
    assert.deepEqual([off.Min, off.Max], [1, 5]);
    const check = (off.Policy.check as Record<string, unknown>[])[0]!;
    assert.ok(Array.isArray(check.cpu), 'every block is a list of objects');
    const zero = nomadJobFor(sampleSpec({ count: 0, scaling: { enabled: true, min: 1, max: 5 } }), settings).TaskGroups[0]!.Scaling;
    assert.deepEqual([zero.Min, zero.Max, zero.Enabled], [0, 5, true], 'Nomad refuses a count outside Min/Max');
    const many = nomadJobFor(sampleSpec({ count: 7, scaling: { enabled: false, min: 1, max: 5 } }), settings).TaskGroups[0]!.Scaling;
    assert.deepEqual([many.Min, many.Max], [1, 7]);
  });

  it('aims the scaling policy at NOMAD_SCALING_TARGET_CPU_PERCENT of the allocated CPU (70 unless set)', () => {
    const cpuCheck = (env: Record<string, string>) => {
      const policy = nomadJobFor(sampleSpec(), defaultNomadSettings(env)).TaskGroups[0]!.Scaling.Policy;
      return (policy.check as { cpu: Record<string, unknown>[] }[])[0]!.cpu[0];
    };
    assert.deepEqual(cpuCheck({}), { source: 'nomad-apm', query: 'avg_cpu-allocated', strategy: [{ 'target-value': [{ target: 70 }] }] });
    assert.deepEqual(cpuCheck({ NOMAD_SCALING_TARGET_CPU_PERCENT: '45' }), { source: 'nomad-apm', query: 'avg_cpu-allocated', strategy: [{ 'target-value': [{ target: 45 }] }] });
  });

  it('gives the agent task the agent-services identity and the three variables only when agent nodes can reach the agent services', () => {
    const without = nomadJobFor(sampleSpec(), settings).TaskGroups[0]!.Tasks[0]!;
    assert.equal('Identities' in without, false);
    assert.equal(Object.keys(without.Env).some((name) => name.startsWith('AGENT_SERVICES') || name === 'SESSION_MAX_BYTES'), false);
    const access = { url: 'http://10.0.1.5:7090', tokenTtlSeconds: 900, maxSessionBytes: 65_536 };
    const task = nomadJobFor(sampleSpec(), settings, access).TaskGroups[0]!.Tasks[0]!;
    // A named identity with a TTL (Nomad refuses one on the default identity), written to secrets/nomad_agent-services.jwt, renewed without a restart.
    assert.deepEqual(task.Identities, [{ Name: 'agent-services', Audience: ['agent-services'], Env: false, File: true, TTL: 900 * SECOND_NS, ChangeMode: '' }]);
    assert.deepEqual(
      { url: task.Env.AGENT_SERVICES_URL, file: task.Env.AGENT_SERVICES_TOKEN_FILE, max: task.Env.SESSION_MAX_BYTES },
      { url: 'http://10.0.1.5:7090', file: '${NOMAD_SECRETS_DIR}/nomad_agent-services.jwt', max: '65536' },
    );
    assert.equal(task.Env.AGENT_ID, sampleSpec().env.AGENT_ID, "the agent's own env is kept");
    // A canary's job has them too: both versions' replicas keep the conversations.
    const canary = nomadJobFor({ ...sampleSpec({ version: 4, count: 1 }), stable: sampleSpec({ version: 3 }) }, settings, access).TaskGroups[0]!.Tasks[0]!;
    assert.deepEqual(canary.Identities, task.Identities);
  });
});
