import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { nomadJobFor } from '../control/orchestrator/nomad/job-spec.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { goDuration } from './support/fake-nomad/validate/go-format.js';
import { validateReschedulePolicy } from './support/fake-nomad/validate/policies.js';
import { admitJobRegistration, type ClusterFacts } from './support/fake-nomad/validate/register.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';

/**
 * The fake Nomad applies Nomad's own admission rules, ported from hashicorp/nomad
 * (test/support/fake-nomad/validate/): each case is a job Nomad would refuse, refused
 * with Nomad's message. A refused job is Nomad's HTTP 500 (a plain server error), not 400.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;
const FACTS: ClusterFacts = { region: 'global', namespaces: new Set(['default']), nodePools: new Set(['default', 'all', 'agents']) };

/** A job of the shape the driver sends, valid for Nomad; count 0, so the fake starts no container. */
function agentJob(): Json {
  return {
    Job: {
      ID: 'agent-agt_7Qm2XbR9kLp4TzW1nVc8', Name: 'Support bot (support-bot)', Type: 'service', Namespace: 'default', Datacenters: ['dc1'], NodePool: 'agents',
      Meta: { agent_id: 'agt_7Qm2XbR9kLp4TzW1nVc8', slug: 'support-bot' },
      TaskGroups: [{
        Name: 'agent', Count: 0,
        Networks: [{ Mode: 'host', DynamicPorts: [{ Label: 'http', Value: 0, To: 8080 }] }],
        Services: [{ Name: 'agent-support-bot', Tags: ['platform-agent'], PortLabel: 'http', Provider: 'consul', Checks: [{ Name: 'health', Type: 'http', Path: '/health', Interval: 5 * SECOND, Timeout: 2 * SECOND }] }],
        RestartPolicy: { Attempts: 5, Interval: 1800 * SECOND, Delay: SECOND, Mode: 'fail' },
        ReschedulePolicy: { Attempts: 0, Interval: 0, Delay: 30 * SECOND, DelayFunction: 'constant', MaxDelay: 0, Unlimited: false },
        Update: { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 10 * SECOND, HealthyDeadline: 300 * SECOND, ProgressDeadline: 600 * SECOND, AutoRevert: true, Canary: 0 },
        Scaling: { Type: 'horizontal', Min: 0, Max: 5, Enabled: true, Policy: {} },
        Tasks: [{
          Name: 'agent', Driver: 'docker', Config: { image: 'localhost/agent-runtime:latest', ports: ['http'] },
          Templates: [{ EmbeddedTmpl: '{{ with nomadVar "nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8" }}{{ end }}', DestPath: 'secrets/agent.env', Envvars: true, ChangeMode: 'noop' }],
          Resources: { CPU: 500, MemoryMB: 256 }, KillTimeout: 10 * SECOND,
        }],
      }],
    },
    PreserveCounts: true,
  };
}

const group = (request: Json) => request.Job.TaskGroups[0];
const task = (request: Json) => group(request).Tasks[0];
const refusal = (request: Json, facts = FACTS) => {
  const answer = admitJobRegistration(request, new URLSearchParams(), facts, undefined);
  return 'status' in answer ? answer.message : null;
};

describe("the fake Nomad applies Nomad's own job validation", function () {
  this.timeout(30_000);
  let cluster: FakeCluster;

  before(async () => {
    cluster = await startFakeCluster();
  });
  after(async () => cluster?.close());

  const nomad = (method: string, path: string, body?: unknown) =>
    fetch(cluster.nomadAddr + path, { method, headers: { 'X-Nomad-Token': cluster.nomadToken, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });

  /** Registers through the fake's HTTP API and expects Nomad's refusal: 500, the message, nothing stored. */
  async function refused(request: Json, ...messages: string[]): Promise<string> {
    const response = await nomad('PUT', '/v1/jobs', request);
    const text = await response.text();
    assert.equal(response.status, 500, text);
    for (const message of messages) assert.ok(text.includes(message), `expected ${JSON.stringify(message)} in:\n${text}`);
    assert.equal(cluster.job(request.Job.ID), undefined, 'nothing registered');
    return text;
  }

  it('accepts the job of the shape the driver sends, with the defaults Nomad fills in first', async () => {
    const response = await nomad('PUT', '/v1/jobs', agentJob());
    assert.equal(response.status, 200, await response.clone().text());
    await nomad('DELETE', '/v1/job/agent-agt_7Qm2XbR9kLp4TzW1nVc8?purge=true');
  });

  it('accepts nomad-jobs/agent.example.json, the job the driver generates, after canonicalization', () => {
    const request = JSON.parse(readFileSync('nomad-jobs/agent.example.json', 'utf8'));
    assert.equal(refusal(request), null);
  });

  it("accepts the driver's job for an agent (nomadJobFor), http and tcp checks, any count, and a canary's", () => {
    // The last: a canary of 1 beside 2 stable replicas (update block `canary`, service CanaryTags).
    const canary = { ...sampleSpec({ version: 4, count: 1 }), stable: sampleSpec({ version: 3, count: 2 }) };
    for (const spec of [sampleSpec(), sampleSpec({ check: 'tcp', count: 0 }), sampleSpec({ count: 5 }), canary]) {
      assert.equal(refusal({ Job: nomadJobFor(spec, defaultNomadSettings()), PreserveCounts: true }), null);
    }
  });

  it('a job whose service is named agent-<agent id> is refused, as Nomad\'s Service.ValidateName refuses it', async () => {
    const request = agentJob();
    group(request).Services[0].Name = 'agent-agt_7Qm2XbR9kLp4TzW1nVc8';
    const text = await refused(request);
    assert.equal(text, [
      '1 error occurred:',
      '\t* Task group agent validation failed: 1 error occurred:',
      '\t* Task group service validation failed: 1 error occurred:',
      '\t* Service[0] agent-agt_7Qm2XbR9kLp4TzW1nVc8 validation failed: 1 error occurred:',
      '\t* Service name must be valid per RFC 1123 and can contain only alphanumeric characters or dashes and must be no longer than 63 characters: "agent-agt_7Qm2XbR9kLp4TzW1nVc8"',
      '', '', '', '', '', '', '', '',
    ].join('\n'));
  });

  it('refuses a service name of 64 characters and accepts one of 63', async () => {
    const request = agentJob();
    group(request).Services[0].Name = `agent-${'a'.repeat(58)}`;
    await refused(request, 'must be no longer than 63 characters');
    group(request).Services[0].Name = `agent-${'a'.repeat(57)}`;
    assert.equal(refusal(request), null);
  });

  it('refuses a restart policy that cannot fit its attempts and delays in the interval (mode fail)', async () => {
    const request = agentJob();
    group(request).RestartPolicy = { Attempts: 5, Interval: 30 * SECOND, Delay: 10 * SECOND, Mode: 'fail' };
    await refused(request, "Nomad can't restart the TaskGroup 5 times in an interval of 30s with a delay of 10s");
  });

  it('refuses a reschedule policy with both Attempts and Unlimited', async () => {
    const request = agentJob();
    group(request).ReschedulePolicy = { Attempts: 1, Interval: 3600 * SECOND, Delay: 30 * SECOND, DelayFunction: 'exponential', MaxDelay: 3600 * SECOND, Unlimited: true };
    await refused(request, 'Reschedule Policy with Attempts = 1, Interval = 1h0m0s, and Unlimited = true is ambiguous', 'If Attempts >0, Unlimited cannot also be set to true');
  });

  it("gives the reschedule messages of Nomad's own test table (structs_test.go, TestReschedulePolicy_Validate)", () => {
    const minute = 60 * SECOND;
    const cases: [Json, string[]][] = [
      [{ Attempts: 10, Interval: 60 * minute, Delay: 20 * minute, DelayFunction: 'constant', MaxDelay: 0, Unlimited: false },
        ['Nomad can only make 3 attempts in 1h0m0s with initial delay 20m0s and delay function "constant"', 'Set the interval to at least 3h20m0s to accommodate 10 attempts']],
      [{ Attempts: 10, Interval: 30 * minute, Delay: 5 * minute, DelayFunction: 'exponential', MaxDelay: 40 * minute, Unlimited: false },
        ['Nomad can only make 3 attempts in 30m0s with initial delay 5m0s, delay function "exponential", and delay ceiling 40m0s', 'Set the interval to at least 4h40m0s to accommodate 10 attempts']],
      [{ Attempts: 10, Interval: 60 * minute, Delay: 20 * minute, DelayFunction: 'fibonacci', MaxDelay: 80 * minute, Unlimited: false },
        ['Nomad can only make 4 attempts in 1h0m0s with initial delay 20m0s, delay function "fibonacci", and delay ceiling 1h20m0s', 'Set the interval to at least 8h0m0s to accommodate 10 attempts']],
      [{ Attempts: 1, Interval: SECOND, Delay: 0, DelayFunction: 'exponential', MaxDelay: 0, Unlimited: true },
        ['Delay cannot be less than 5s (got 0s)', 'Max Delay cannot be less than 5s (got 0s)']],
      [{ Attempts: 1, Interval: 0, Delay: 5 * minute, DelayFunction: 'blah', MaxDelay: 0, Unlimited: false },
        ['Invalid delay function "blah", must be one of ["constant" "exponential" "fibonacci"]']],
    ];
    for (const [policy, messages] of cases) {
      const text = String(validateReschedulePolicy(policy));
      for (const message of messages) assert.ok(text.includes(message), `expected ${JSON.stringify(message)} in:\n${text}`);
    }
    assert.equal(validateReschedulePolicy({ Attempts: 0, Interval: 0, Delay: 5 * SECOND, DelayFunction: 'exponential', MaxDelay: 3600 * SECOND, Unlimited: true }), null);
  });

  it('refuses an update block with a negative max_parallel or an unknown health check', async () => {
    const request = agentJob();
    group(request).Update = { ...group(request).Update, MaxParallel: -1, HealthCheck: 'alive', MinHealthyTime: 400 * SECOND };
    await refused(request, 'Max parallel can not be less than zero: -1 < 0', 'Invalid health check given: "alive"', 'Minimum healthy time must be less than healthy deadline: 6m40s > 5m0s');
  });

  it('refuses a signal template without a signal, and signals on an env template; noop and restart pass', async () => {
    const request = agentJob();
    task(request).Templates[0] = { ...task(request).Templates[0], ChangeMode: 'signal', ChangeSignal: '' };
    await refused(request, 'Template 1 validation failed', 'Must specify signal value when change mode is signal', 'cannot use signals with env var templates');
    task(request).Templates[0] = { ...task(request).Templates[0], ChangeMode: 'reload' };
    await refused(request, 'Invalid change mode. Must be one of the following: noop, signal, script, restart');
    for (const mode of ['noop', 'restart']) {
      task(request).Templates[0] = { ...task(request).Templates[0], ChangeMode: mode, ChangeSignal: undefined };
      assert.equal(refusal(request), null, mode);
    }
    // Canonicalization first: a signal template that names no signal gets SIGHUP (api/tasks.go, Template.Canonicalize).
    task(request).Templates[0] = { ...task(request).Templates[0], ChangeMode: 'signal', ChangeSignal: undefined, Envvars: false };
    assert.equal(refusal(request), null);
  });

  it('refuses a template whose destination leaves the allocation directory', async () => {
    const request = agentJob();
    task(request).Templates[0].DestPath = '../../../etc/agent.env';
    await refused(request, 'destination escapes allocation directory');
  });

  it('refuses a node pool that does not exist, and accepts the built-in ones and those the cluster has', async () => {
    const request = agentJob();
    request.Job.NodePool = 'gpu';
    await refused(request, 'job "agent-agt_7Qm2XbR9kLp4TzW1nVc8" is in nonexistent node pool "gpu"');
    for (const pool of ['default', 'all', 'agents', undefined]) {
      request.Job.NodePool = pool;
      assert.equal(refusal(request), null, String(pool));
    }
    const withGpu = await startFakeCluster({ nodePools: ['gpu'] });
    try {
      request.Job.NodePool = 'gpu';
      const response = await fetch(`${withGpu.nomadAddr}/v1/jobs`, { method: 'PUT', headers: { 'X-Nomad-Token': withGpu.nomadToken }, body: JSON.stringify(request) });
      assert.equal(response.status, 200, await response.clone().text());
    } finally {
      await withGpu.close();
    }
  });

  it('refuses a namespace that does not exist', async () => {
    const request = agentJob();
    request.Job.Namespace = 'agents';
    await refused(request, 'job "agent-agt_7Qm2XbR9kLp4TzW1nVc8" is in nonexistent namespace "agents"');
    assert.equal(refusal(request, { ...FACTS, namespaces: new Set(['default', 'agents']) }), null);
  });

  it('refuses a count outside the scaling policy, and a policy without a maximum', async () => {
    const request = agentJob();
    group(request).Count = 6;
    await refused(request, 'Task group scaling policy validation failed', 'Scaling policy invalid: task group count must not be greater than maximum count in scaling policy');
    group(request).Count = 0;
    group(request).Scaling = { ...group(request).Scaling, Min: 1 };
    await refused(request, 'Scaling policy invalid: task group count must not be less than minimum count in scaling policy');
    group(request).Scaling = { Type: 'horizontal', Min: 0, Enabled: true };
    await refused(request, 'Scaling policy invalid: maximum count must be specified and non-negative');
  });

  it('refuses a scale request outside the policy, for a group the job lacks, or for no job', async () => {
    const request = agentJob();
    request.Job.ID = 'agent-scaled';
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    const scale = (body: Json, id = 'agent-scaled') => nomad('POST', `/v1/job/${id}/scale`, body);
    let response = await scale({ Count: 9, Target: { Job: 'agent-scaled', Group: 'agent' } });
    assert.deepEqual([response.status, await response.text()], [400, 'group count was greater than scaling policy maximum: 9 > 5']);
    response = await scale({ Count: 1, Target: { Group: 'web' } });
    assert.deepEqual([response.status, await response.text()], [400, 'task group "web" specified for scaling does not exist in job']);
    response = await scale({ Count: 1, Target: { Job: 'agent-scaled' } });
    assert.deepEqual([response.status, await response.text()], [400, 'missing task group name for scaling action']);
    response = await scale({ Count: 1, Target: { Job: 'agent-other', Group: 'agent' } });
    assert.deepEqual([response.status, await response.text()], [400, 'job ID in payload did not match URL']);
    response = await scale({ Count: 1, Target: { Group: 'agent' } }, 'agent-none');
    assert.deepEqual([response.status, await response.text()], [404, 'job "agent-none" not found']);
    await nomad('DELETE', '/v1/job/agent-scaled?purge=true');
  });

  it('refuses constraints Nomad refuses, and accepts one on the node class', async () => {
    const request = agentJob();
    request.Job.Constraints = [{ LTarget: '${node.klass}', RTarget: 'agents', Operand: '=' }, { LTarget: '${node.class}', RTarget: '', Operand: '=' }];
    await refused(request, 'Constraint 1 validation failed', 'unsupported attribute "${node.klass}"', 'Operator "=" requires an RTarget');
    request.Job.Constraints = [{ LTarget: '${node.class}', RTarget: 'agents', Operand: '=' }, { LTarget: '${attr.consul.version}', RTarget: '>= 1.8.0', Operand: 'semver' }];
    assert.equal(refusal(request), null);
  });

  it('refuses a job name with a NUL, and takes any other name and meta', async () => {
    const request = agentJob();
    request.Job.Name = 'Support\u0000bot';
    await refused(request, 'Job Name contains a null character');
    request.Job.Name = 'Support bot — Ünïcode (support-bot)';
    request.Job.Meta = { url: 'https://support-bot.agents.example.com', agent_name: 'Support bot' };
    assert.equal(refusal(request), null);
  });

  it('refuses an unknown service provider, mixed providers, and checks Consul would not run', async () => {
    const request = agentJob();
    group(request).Services[0].Provider = 'etcd';
    await refused(request, 'Service provider must be "consul", or "nomad"; not "etcd"');
    group(request).Services[0].Provider = 'consul';
    group(request).Services.push({ Name: 'agent-support-bot-admin', PortLabel: 'http', Provider: 'nomad' });
    await refused(request, 'Multiple service providers used: task group services must use the same provider');
    group(request).Services.pop();
    group(request).Services[0].Checks[0] = { Name: 'health', Type: 'http', Path: 'http://example.com/health', Interval: 500_000_000, Timeout: 2 * SECOND };
    await refused(request, 'Check health invalid: http type must have relative http path');
    group(request).Services[0].Checks[0].Path = '/health';
    await refused(request, 'Check health invalid: interval (500ms) cannot be lower than 1s');
  });

  it('refuses resources below the minimum and logs that do not fit the ephemeral disk', async () => {
    const request = agentJob();
    task(request).Resources = { CPU: 0, MemoryMB: 4 };
    group(request).EphemeralDisk = { SizeMB: 100 };
    await refused(request, 'minimum CPU value is 1; got 0', 'minimum MemoryMB value is 10; got 4', 'log storage (100 MB) must be less than requested disk capacity (100 MB)');
  });

  it('refuses a port mapped past 65535 and a task service on a port label the group lacks', async () => {
    const request = agentJob();
    group(request).Networks[0].DynamicPorts[0].To = 70000;
    task(request).Services = [{ Name: 'agent-support-bot-task', PortLabel: 'admin', Provider: 'consul' }];
    await refused(request, 'Port "http" cannot be mapped to a port (70000) greater than 65535', 'port label "admin" referenced by services agent-support-bot-task does not exist');
  });

  it("refuses Variable paths Nomad reserves or cannot store, with Nomad's doubly-coded 400", async () => {
    const put = (path: string, items: Json = { K: 'v' }) => nomad('PUT', `/v1/var/${path}`, { Items: items });
    let response = await put('nomad/agents/x');
    assert.deepEqual([response.status, await response.text()], [400, 'RPC Error:: 400,only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level "nomad" directory']);
    response = await put('nomad/jobs/agent.x');
    assert.deepEqual([response.status, await response.text()], [400, 'RPC Error:: 400,invalid path "nomad/jobs/agent.x"']);
    response = await put('nomad/jobs/agent-big', { K: 'x'.repeat(65536) });
    assert.equal(response.status, 400);
    assert.match(await response.text(), /variables are limited to 64KiB in total size/);
    response = await put('nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8');
    assert.equal(response.status, 200);
  });

  it("formats durations as Go's time.Duration does (time_test.go, durationTests)", () => {
    const ns = 1, us = 1_000, ms = 1_000_000, minute = 60 * SECOND, hour = 60 * minute;
    const cases: [string, number][] = [
      ['0s', 0], ['1ns', ns], ['1.1µs', 1100 * ns], ['2.2ms', 2200 * us], ['3.3s', 3300 * ms], ['4m5s', 4 * minute + 5 * SECOND],
      ['4m5.001s', 4 * minute + 5001 * ms], ['5h6m7.001s', 5 * hour + 6 * minute + 7001 * ms], ['8m0.000000001s', 8 * minute + ns],
    ];
    for (const [text, value] of cases) {
      assert.equal(goDuration(value), text);
      if (value > 0) assert.equal(goDuration(-value), `-${text}`);
    }
  });
});
