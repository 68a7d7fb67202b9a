import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectError, expectStatus } from './support/control-api.js';
import { edgeRequest } from './support/edge-upstream.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { SseReader } from './support/orch-helpers.js';
import { containersOf, podmanStates } from './support/podman.js';
import { waitFor } from './support/wait.js';

/** What one caller got for one request through the edge. */
interface Answer {
  status: number;
  /** The X-Agent-Version the replica stamped (test/support/test-image.ts); undefined when the edge answered itself. */
  version: string | undefined;
  body: string;
}

/** A canary's settings as the deploy body takes them (issue 36). */
interface CanaryInput {
  percent: number;
  replicas?: number;
  affinity?: 'none' | 'caller';
  auto_promote_after_seconds?: number | null;
  max_error_ratio?: number;
  min_requests?: number;
}

/** An agent of the test with version 1 running and routable at the edge. */
interface Stable {
  token: string;
  id: string;
  /** The agent's hostname at the edge. */
  host: string;
  slug: string;
  /** The key callers send: the first access key of a private agent, none for a public one. */
  key: string | undefined;
  /** Deployment 1, of version v1. */
  deployment: any;
}

/**
 * Issue 36 end to end, as a user meets it: the control API orchestrating real podman
 * containers of the test image (MODE=agent: each answer says its version in
 * X-Agent-Version, and FAIL_PERCENT makes a share of invokes answer 500), authz and the
 * local edge in front, every request a caller's POST /invoke through the edge. A version
 * v1 runs; v2 is deployed as a canary beside it; the test counts which version answered,
 * and ends the canary by hand (promote, abort) or lets the control API's judge end it
 * (an abort on its 5xx ratio, a promotion after auto_promote_after_seconds).
 *
 * The control API runs its background loops as control/main.ts does (the judge among
 * them), and its clock follows the wall clock, as systemClock does in production: the
 * edge stamps request figures by the wall clock, and auto_promote_after_seconds is real
 * time. Each test signs up an account of its own on the pro plan (3,000 requests a minute
 * per agent, room for both versions' replicas), and each agent lets one caller send
 * 100,000 a minute, so that no 429 is ever part of what is counted.
 */
describe('canary deploys end to end (podman, authz, the local edge)', function () {
  this.timeout(180_000);
  let control: TestControl;
  let edge: LocalEdgeStack;
  let clockFollower: NodeJS.Timeout | undefined;

  before(async () => {
    control = await startControl({}, { orchestrate: true });
    clockFollower = setInterval(() => control.clock.set(new Date()), 100);
    control.clock.set(new Date());
    await control.control.loops.start();
    // Containers start and stop while answers are counted: a Check slowed past authz's 100 ms
    // Redis deadline by the loaded machine would be a fail-closed 503 that is not the canary's.
    edge = await startLocalEdgeStack(control, { authzRedisTimeoutMs: 2_000 });
  });
  after(async () => {
    clearInterval(clockFollower);
    await edge?.close();
    await control?.close();
  });

  // ---- callers ----

  /** POST /invoke through the edge, as a caller with `key` (if any) does; never throws (a broken connection is status 0). */
  async function invoke(host: string, key?: string): Promise<Answer> {
    const body = JSON.stringify({ input: 'which version' });
    const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    if (key) headers.authorization = `Bearer ${key}`;
    try {
      const answer = await edgeRequest({ port: edge.port, host, path: '/invoke', method: 'POST', headers, body });
      const version = answer.headers['x-agent-version'];
      return { status: answer.status, version: Array.isArray(version) ? version.join(',') : version, body: answer.body };
    } catch (error) {
      return { status: 0, version: undefined, body: (error as Error).message };
    }
  }

  /** `count` requests, `concurrency` at a time, each made by `call(i)`. */
  async function sendMany(count: number, call: (i: number) => Promise<Answer>, concurrency = 8): Promise<Answer[]> {
    const answers: Answer[] = new Array(count);
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        answers[i] = await call(i);
      }
    }));
    return answers;
  }

  /**
   * Requests at a steady `perSecond`, each started on its own tick whatever the previous
   * one's latency, until stopped; `stop` waits for those in flight.
   */
  function steadyTraffic(host: string, key: string | undefined, perSecond: number) {
    const answers: Answer[] = [];
    const inFlight = new Set<Promise<void>>();
    const startedAt = Date.now();
    const timer = setInterval(() => {
      const sent: Promise<void> = invoke(host, key).then((answer) => {
        answers.push(answer);
        inFlight.delete(sent);
      });
      inFlight.add(sent);
    }, 1000 / perSecond);
    return {
      answers,
      async stop(): Promise<{ answers: Answer[]; seconds: number }> {
        clearInterval(timer);
        const seconds = (Date.now() - startedAt) / 1000;
        await Promise.all([...inFlight]);
        return { answers, seconds };
      },
    };
  }

  /** `200 v1: 180, 200 v2: 20`, for a failure message. */
  function tally(answers: Answer[]): string {
    const counts = new Map<string, number>();
    for (const { status, version, body } of answers) {
      const shown = `${status} ${version ?? `(no version: ${body.slice(0, 80)})`}`;
      counts.set(shown, (counts.get(shown) ?? 0) + 1);
    }
    return [...counts].map(([shown, n]) => `${shown}: ${n}`).join(', ');
  }

  const count = (answers: Answer[], status: number, version?: string) =>
    answers.filter((a) => a.status === status && (version === undefined || a.version === version)).length;

  /** Every answer a 200 of `version`. */
  function allAnsweredBy(answers: Answer[], version: string, what: string): void {
    assert.equal(count(answers, 200, version), answers.length, `${what}: ${tally(answers)}`);
  }

  // ---- the control API ----

  const envOf = (label: string, extra: Record<string, string> = {}) =>
    Object.entries({ MODE: 'agent', AGENT_VERSION_LABEL: label, ...extra }).map(([key, value]) => ({ key, value }));

  /** A new account on the pro plan, with an agent running v1 on `replicas`, answering at the edge and its deployment succeeded. */
  async function stableAgent(options: { access: 'public' | 'private'; replicas: number }): Promise<Stable> {
    const { token, user } = await control.signUp();
    await control.db('accounts').where({ id: user.account_id }).update({ plan: 'pro' });
    const created = await control.request('POST', '/agents', {
      token,
      body: { name: 'canary', api_key: 'sk-test', access: options.access, rate_limit_rpm: 100_000, deploy: { replicas: options.replicas, env: envOf('v1') } },
    });
    expectStatus(created, 201);
    const id: string = created.body.id;
    const host = new URL(created.body.url).hostname;
    const key: string | undefined = created.body.access_key ?? undefined;
    assert.equal(options.access === 'private', key !== undefined, 'a private agent comes with its first key');
    const [deployment] = await waitFor(`deployment 1 of ${id} succeeded; podman has ${podmanStates(id)}`, async () => {
      const { deployments } = (await control.request('GET', `/agents/${id}/deployments`, { token })).body;
      if (deployments[0]?.status === 'failed') throw new Error(`deployment 1 failed: ${deployments[0].error}`);
      return deployments[0]?.status === 'succeeded' ? deployments : undefined;
    }, 90_000, 250);
    await waitFor(`${options.replicas} replica(s) of v1 running`, async () => {
      const agent = (await control.request('GET', `/agents/${id}`, { token })).body;
      return agent.status === 'running' && agent.replicas === options.replicas ? true : undefined;
    }, 60_000, 250);
    await waitFor('v1 answering at the edge', async () => {
      const answer = await invoke(host, key);
      return answer.status === 200 && answer.version === 'v1' ? true : undefined;
    }, 60_000, 250);
    return { token, id, host, slug: host.split('.')[0]!, key, deployment };
  }

  const getDeployment = async (agent: Stable, deploymentId: string) => {
    const response = await control.request('GET', `/agents/${agent.id}/deployments/${deploymentId}`, { token: agent.token });
    expectStatus(response, 200);
    return response.body;
  };

  /** Polls the deployment until `predicate` holds; fails at once if it reached another end. */
  function deploymentWhen(agent: Stable, deploymentId: string, what: string, predicate: (deployment: any) => boolean, timeoutMs = 90_000): Promise<any> {
    let last: any;
    return waitFor(`deployment ${deploymentId} ${what}`, async () => {
      last = await getDeployment(agent, deploymentId);
      if (predicate(last)) return last;
      if (['succeeded', 'failed', 'cancelled', 'superseded'].includes(last.status)) {
        throw new Error(`it ended ${last.status} instead (error: ${last.error}); podman has ${podmanStates(agent.id)}`);
      }
      return undefined;
    }, timeoutMs, 500).catch((error: Error) => {
      throw new Error(`${error.message}; last seen: status ${last?.status}, phase ${last?.phase}, canary ${JSON.stringify(last?.canary)}`);
    });
  }

  /** Deploys v2 (`env` on top of MODE and its label) as a canary; returns its deployment once the canary takes traffic. */
  async function deployCanary(agent: Stable, strategy: CanaryInput, env: Record<string, string> = {}) {
    const deployed = await control.request('POST', `/agents/${agent.id}/deploy`, {
      token: agent.token,
      body: { env: envOf('v2', env), strategy: { type: 'canary', ...strategy } },
    });
    expectStatus(deployed, 202);
    const { deployments } = (await control.request('GET', `/agents/${agent.id}/deployments`, { token: agent.token })).body;
    const newest = deployments[0];
    assert.equal(newest.number, agent.deployment.number + 1, 'the deploy made the newest deployment');
    assert.equal(newest.strategy?.type, 'canary', JSON.stringify(newest.strategy));
    const canary = await deploymentWhen(agent, newest.id, "in phase 'canary'", (d) => d.phase === 'canary' && d.status === 'in_progress');
    // The phase says the canary takes its share: its replica runs (and the edge routes to it) by then.
    const running = await versionsRunning(agent.id);
    assert.ok(running.includes(`${canary.agent_version}:running`), `phase 'canary' only once the canary's replica runs; the orchestrator has ${running.join(', ')}`);
    return canary;
  }

  const versionsRunning = async (agentId: string) => ((await control.driver.status(agentId))?.replicas ?? []).map((r) => `${r.version}:${r.state}`).sort();

  /** The progress events of the deployment's event stream, read to its end (the deployment has ended). */
  async function progressOf(agent: Stable, deploymentId: string): Promise<{ phase: string; at: string }[]> {
    const reader = await SseReader.open(`${control.baseUrl}/agents/${agent.id}/deployments/${deploymentId}/events`, { authorization: `Bearer ${agent.token}` });
    assert.equal(reader.status, 200, reader.body);
    try {
      await reader.ends(20_000);
    } finally {
      reader.close();
    }
    return reader.frames.filter((frame) => frame.event === 'progress').map((frame) => JSON.parse(frame.data));
  }

  const phasesOf = async (agent: Stable, deploymentId: string) => (await progressOf(agent, deploymentId)).map((event) => event.phase);

  // ---- the cases ----

  it('refuses a canary for an agent with no running version: 409 CANARY_NOT_POSSIBLE', async () => {
    const { token, user } = await control.signUp();
    await control.db('accounts').where({ id: user.account_id }).update({ plan: 'pro' });
    const created = await control.request('POST', '/agents', { token, body: { name: 'idle', api_key: 'sk-test' } });
    expectStatus(created, 201);
    const refused = await control.request('POST', `/agents/${created.body.id}/deploy`, {
      token,
      body: { env: envOf('v2'), strategy: { type: 'canary', percent: 10 } },
    });
    expectError(refused, 409, 'CANARY_NOT_POSSIBLE');
  });

  it('sends about 10% of 2,000 requests to a 10% canary (7.5–12.5%), and shows the split in its figures', async function () {
    const agent = await stableAgent({ access: 'public', replicas: 2 });
    // Before the canary, v1 alone answers.
    allAnsweredBy(await sendMany(100, () => invoke(agent.host)), 'v1', 'before the canary');

    const canary = await deployCanary(agent, { percent: 10 });
    assert.deepEqual(canary.strategy, {
      type: 'canary', percent: 10, replicas: 1, affinity: 'none', auto_promote_after_seconds: null, max_error_ratio: 0.05, min_requests: 50,
    }, 'the strategy with its defaults filled in');
    assert.equal(canary.canary.percent, 10);
    assert.ok(!Number.isNaN(Date.parse(canary.canary.started_at)), `started_at ${canary.canary.started_at}`);
    const stableRunning = `${agent.deployment.agent_version}:running`;
    assert.deepEqual(await versionsRunning(agent.id), [stableRunning, stableRunning, `${canary.agent_version}:running`].sort(),
      "phase 'canary' once the canary's replica runs beside the stable ones, not before");

    const answers = await sendMany(2_000, () => invoke(agent.host));
    const v2 = count(answers, 200, 'v2');
    const v1 = count(answers, 200, 'v1');
    assert.equal(v1 + v2, 2_000, `every request answered 200 by one of the versions: ${tally(answers)}`);
    // Binomial(2000, 0.1): 200 ± 13.4; the band is ±3.7 standard deviations.
    assert.ok(v2 >= 150 && v2 <= 250, `v2 answered ${v2} of 2,000 (${(v2 / 20).toFixed(1)}%), outside 7.5–12.5%`);

    // The deployment's figures count each version apart: the canary's are exactly the requests v2 answered.
    const figures = await deploymentWhen(agent, canary.id, 'figures with every request counted', (d) =>
      d.canary?.figures?.canary?.request_count >= v2 && d.canary?.figures?.stable?.request_count >= v1, 15_000);
    assert.equal(figures.canary.figures.canary.request_count, v2, JSON.stringify(figures.canary.figures));
    assert.equal(figures.canary.figures.canary.error_count, 0);
    assert.equal(figures.canary.figures.stable.error_count, 0);
    assert.equal(figures.phase, 'canary');
  });

  it('keeps each caller on one version with affinity caller: 50 keys, several rounds, each key always the same version', async () => {
    const agent = await stableAgent({ access: 'private', replicas: 1 });
    const keys = [agent.key!];
    for (let i = 1; i < 50; i += 1) {
      const created = await control.request('POST', `/agents/${agent.id}/access-keys`, { token: agent.token, body: { label: `caller ${i}` } });
      expectStatus(created, 201);
      keys.push(created.body.key);
    }
    // 50%: without affinity a key would see both versions within five rounds (all but 1 in 16 keys would).
    await deployCanary(agent, { percent: 50, affinity: 'caller' });

    const seen = new Map<string, Set<string>>(keys.map((key) => [key, new Set()]));
    const rounds = 5;
    for (let round = 0; round < rounds; round += 1) {
      const answers = await sendMany(keys.length, (i) => invoke(agent.host, keys[i]));
      assert.equal(count(answers, 200), keys.length, `round ${round + 1}: ${tally(answers)}`);
      answers.forEach((answer, i) => seen.get(keys[i]!)!.add(answer.version ?? '(none)'));
    }
    const mixed = [...seen.values()].filter((versions) => versions.size !== 1).length;
    assert.equal(mixed, 0, `${mixed} of 50 keys saw both versions over ${rounds} rounds`);
    const onCanary = [...seen.values()].filter((versions) => versions.has('v2')).length;
    // Binomial(50, 0.5): 25 ± 3.5; both versions must have their callers.
    assert.ok(onCanary >= 10 && onCanary <= 40, `${onCanary} of 50 keys on the canary at 50%`);
  });

  it("reaches only the canary at its preview URL <slug>--d<n>, with the agent's access rules; a second canary is refused (409)", async () => {
    const agent = await stableAgent({ access: 'private', replicas: 1 });
    const canary = await deployCanary(agent, { percent: 10 });
    const domain = control.config.agentUrl.domain;
    const preview = `${agent.slug}--d${canary.number}.${domain}`;
    assert.equal(new URL(canary.canary.preview_url).hostname, preview, canary.canary.preview_url);

    allAnsweredBy(await sendMany(50, () => invoke(preview, agent.key)), 'v2', 'the preview with the key');
    const withoutKey = await invoke(preview);
    assert.equal(withoutKey.status, 401, `without a key: ${withoutKey.status} ${withoutKey.body}`);
    assert.equal(withoutKey.version, undefined, 'refused at the edge, not by the agent');
    assert.equal((await invoke(preview, 'agk_wrong')).status, 401, 'with a wrong key');
    // Only the running canary's deployment has a preview: the stable one's number is no host.
    assert.equal((await invoke(`${agent.slug}--d${agent.deployment.number}.${domain}`, agent.key)).status, 404);

    // One canary at a time.
    const second = await control.request('POST', `/agents/${agent.id}/deploy`, {
      token: agent.token,
      body: { env: envOf('v3'), strategy: { type: 'canary', percent: 10 } },
    });
    expectError(second, 409, 'CANARY_NOT_POSSIBLE');
    assert.equal((await getDeployment(agent, canary.id)).phase, 'canary', 'the refused deploy left the canary running');
  });

  it('aborts a failing canary on its own (5xx ratio): failed with its figures, few 500s reached callers, v1 alone answers after', async () => {
    const agent = await stableAgent({ access: 'public', replicas: 1 });
    const percent = 20;
    const minRequests = 20;
    const perSecond = 10;
    const traffic = steadyTraffic(agent.host, agent.key, perSecond);
    let canary: any;
    let failed: any;
    let run: { answers: Answer[]; seconds: number };
    try {
      canary = await deployCanary(agent, { percent, min_requests: minRequests }, { FAIL_PERCENT: '50' });
      // No abort by hand: the judge must do it. 90 s is over a minute of the canary's traffic.
      failed = await deploymentWhen(agent, canary.id, 'failed by the judge', (d) => d.status === 'failed', 90_000);
    } finally {
      run = await traffic.stop();
    }

    // Every answer came from a replica: a 200 of either version, or v2's injected 500. No edge 5xx, no broken connection.
    const fromV2 = count(run.answers, 500, 'v2');
    assert.equal(count(run.answers, 200, 'v1') + count(run.answers, 200, 'v2') + fromV2, run.answers.length, tally(run.answers));
    // The judge looks at the last 60 s and acts once the canary has min_requests in them.
    // At worst callers get min_requests 500s plus every canary request of one 60 s window
    // (rate × 60 × percent; at 50% failures about half of those are 500s). The rate is
    // measured, not assumed: a loaded machine sends fewer.
    const rate = run.answers.length / run.seconds;
    const bound = minRequests + Math.ceil(rate * 60 * (percent / 100));
    assert.ok(fromV2 <= bound, `${fromV2} 500s reached callers; at most ${bound} (min_requests ${minRequests} + ${rate.toFixed(1)}/s × 60 s × ${percent}%)`);
    assert.ok(fromV2 > 0, 'the canary did fail some requests (else what did the judge see?)');

    // The verdict carries the figures it was made on (control/domain/canary.ts's reason).
    assert.ok(failed.error, 'the failed deployment says why');
    const figures = /canary (\d+) 5xx of (\d+)/.exec(failed.error);
    assert.ok(figures, `the canary's figures in the error: ${failed.error}`);
    assert.ok(Number(figures[2]) >= minRequests && Number(figures[1]) > 0, failed.error);
    assert.match(failed.error, /5xx ratio/);
    assert.equal(failed.phase, null);

    const phases = await phasesOf(agent, canary.id);
    assert.ok(phases.includes('canary') && phases.includes('aborted'), `phases ${phases.join(', ')}`);

    // Back on v1: every request answered by it at once, and the canary's replica gone.
    allAnsweredBy(await sendMany(100, () => invoke(agent.host)), 'v1', 'after the abort');
    await waitFor(`only v1's replica; podman has ${podmanStates(agent.id)}`, async () =>
      ((await versionsRunning(agent.id)).join() === `${agent.deployment.agent_version}:running` && containersOf(agent.id).length === 1 ? true : undefined), 30_000);
    assert.equal((await control.request('GET', `/agents/${agent.id}`, { token: agent.token })).body.status, 'running');
  });

  it('promotes by hand under steady traffic: every request 200, then v2 alone on the agent’s replicas and the old ones gone', async () => {
    const agent = await stableAgent({ access: 'private', replicas: 2 });
    const canary = await deployCanary(agent, { percent: 10 });
    const traffic = steadyTraffic(agent.host, agent.key, 10);
    let run: { answers: Answer[]; seconds: number };
    let succeeded: any;
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const promoted = await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/promote`, { token: agent.token });
      expectStatus(promoted, 202);
      assert.equal(promoted.body.id, canary.id);
      succeeded = await deploymentWhen(agent, canary.id, 'succeeded', (d) => d.status === 'succeeded');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      run = await traffic.stop();
    }
    assert.ok(run.answers.length > 30, `only ${run.answers.length} requests were sent`);
    assert.equal(count(run.answers, 200), run.answers.length, `every request through the promotion answered 200: ${tally(run.answers)}`);
    assert.ok(count(run.answers, 200, 'v2') > 0, 'v2 took traffic during the run');
    assert.equal(succeeded.phase, null);

    allAnsweredBy(await sendMany(100, () => invoke(agent.host, agent.key)), 'v2', 'after the promotion');
    const v2 = `${canary.agent_version}:running`;
    await waitFor(`v2 alone on 2 replicas; podman has ${podmanStates(agent.id)}`, async () =>
      ((await versionsRunning(agent.id)).join() === [v2, v2].join() && containersOf(agent.id).length === 2 ? true : undefined), 30_000);
    const shown = (await control.request('GET', `/agents/${agent.id}`, { token: agent.token })).body;
    assert.deepEqual([shown.status, shown.replicas], ['running', 2]);

    const phases = await phasesOf(agent, canary.id);
    assert.ok(['canary', 'promoted', 'succeeded'].every((phase) => phases.includes(phase)), `phases ${phases.join(', ')}`);
    assert.ok(phases.indexOf('canary') < phases.indexOf('promoted') && phases.indexOf('promoted') < phases.lastIndexOf('succeeded'), `phases ${phases.join(', ')}`);
    // The preview went with the canary.
    assert.equal((await invoke(`${agent.slug}--d${canary.number}.${control.config.agentUrl.domain}`, agent.key)).status, 404);
  });

  it('aborts by hand under steady traffic: every request 200, then v1 alone and the canary cancelled', async () => {
    const agent = await stableAgent({ access: 'private', replicas: 2 });
    const canary = await deployCanary(agent, { percent: 10 });
    const traffic = steadyTraffic(agent.host, agent.key, 10);
    let run: { answers: Answer[]; seconds: number };
    let cancelled: any;
    try {
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const aborted = await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/abort`, { token: agent.token });
      expectStatus(aborted, 202);
      cancelled = await deploymentWhen(agent, canary.id, 'cancelled', (d) => d.status === 'cancelled');
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      run = await traffic.stop();
    }
    assert.ok(run.answers.length > 30, `only ${run.answers.length} requests were sent`);
    assert.equal(count(run.answers, 200), run.answers.length, `every request through the abort answered 200: ${tally(run.answers)}`);
    assert.equal(cancelled.phase, null);

    allAnsweredBy(await sendMany(100, () => invoke(agent.host, agent.key)), 'v1', 'after the abort');
    const v1 = `${agent.deployment.agent_version}:running`;
    await waitFor(`v1 alone on 2 replicas; podman has ${podmanStates(agent.id)}`, async () =>
      ((await versionsRunning(agent.id)).join() === [v1, v1].join() && containersOf(agent.id).length === 2 ? true : undefined), 30_000);
    assert.equal((await control.request('GET', `/agents/${agent.id}`, { token: agent.token })).body.status, 'running');

    const phases = await phasesOf(agent, canary.id);
    assert.ok(phases.includes('canary') && phases.includes('aborted'), `phases ${phases.join(', ')}`);
    assert.ok(!phases.includes('promoted'), `phases ${phases.join(', ')}`);
    assert.equal((await invoke(`${agent.slug}--d${canary.number}.${control.config.agentUrl.domain}`, agent.key)).status, 404, 'the preview went with the canary');
  });

  it('promotes a healthy canary on its own auto_promote_after_seconds (60 s) after it began to serve, not before', async function () {
    this.timeout(240_000);
    const agent = await stableAgent({ access: 'public', replicas: 1 });
    const canary = await deployCanary(agent, { percent: 20, auto_promote_after_seconds: 60 });
    assert.equal(canary.strategy.auto_promote_after_seconds, 60);
    const traffic = steadyTraffic(agent.host, agent.key, 4);
    let run: { answers: Answer[]; seconds: number };
    try {
      await deploymentWhen(agent, canary.id, 'succeeded', (d) => d.status === 'succeeded', 210_000);
    } finally {
      run = await traffic.stop();
    }
    assert.equal(count(run.answers, 200), run.answers.length, tally(run.answers));
    allAnsweredBy(await sendMany(50, () => invoke(agent.host)), 'v2', 'after the automatic promotion');
    const progress = await progressOf(agent, canary.id);
    const phases = progress.map((event) => event.phase);
    assert.ok(phases.includes('promoted') && !phases.includes('aborted'), `phases ${phases.join(', ')}`);
    // The wait counts from when the canary began to serve (its replica routable), not from the
    // deploy: a canary that took a minute to start must still be watched for its full time.
    const at = (phase: string) => Date.parse(progress.find((event) => event.phase === phase)!.at);
    assert.equal(Date.parse(canary.canary.started_at), at('canary'), 'canary.started_at is when it began to serve');
    const waited = at('promoted') - at('canary');
    assert.ok(waited >= 60_000, `promoted ${(waited / 1000).toFixed(1)} s after it began to serve`);
  });
});
