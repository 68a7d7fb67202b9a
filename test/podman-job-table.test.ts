import assert from 'node:assert/strict';
import pino from 'pino';
import { ManualClock } from './support/manual-clock.js';
import { JobTable } from '../control/orchestrator/podman/job-table.js';
import { sampleSpec } from './support/nomad-samples.js';

const spec = (agentId: string, version = 1) => sampleSpec({ agentId, version });

/**
 * What the podman driver's reconcile holds (JobTable.wantOnly), without podman: the
 * supervisor removes the containers and network of every agent the table does not claim.
 */
describe('podman job table: reconcile with kept agents', () => {
  const table = () => new JobTable(new ManualClock(new Date('2026-01-01T00:00:00Z')), pino({ level: 'silent' }));

  it('keeps a held job of a kept agent as it is, and drops the jobs of agents neither wanted nor kept', () => {
    const jobs = table();
    for (const agentId of ['agt_A', 'agt_Kept', 'agt_Gone']) jobs.want(spec(agentId));
    const keptJob = jobs.get('agt_Kept');
    jobs.wantOnly([spec('agt_A', 2)], ['agt_Kept']);
    assert.deepEqual(jobs.all().map((job) => job.spec.agentId).sort(), ['agt_A', 'agt_Kept']);
    assert.equal(jobs.get('agt_Kept'), keptJob, 'the same job, its replicas and spec untouched');
    assert.equal(jobs.get('agt_A')!.spec.version, 2);
    assert.deepEqual(['agt_A', 'agt_Kept', 'agt_Gone'].map((id) => jobs.claims(id)), [true, true, false]);
  });

  it("claims a kept agent's containers without a job (after a restart) until a reconcile no longer keeps it or it is removed", () => {
    const jobs = table();
    jobs.wantOnly([], ['agt_Kept']);
    assert.equal(jobs.get('agt_Kept'), undefined, 'nothing to run: no spec could be built');
    assert.equal(jobs.claims('agt_Kept'), true);
    jobs.wantOnly([], []);
    assert.equal(jobs.claims('agt_Kept'), false);
    jobs.wantOnly([], ['agt_Kept']);
    jobs.forget('agt_Kept');
    assert.equal(jobs.claims('agt_Kept'), false);
  });

  describe('a canary (JobSpec.stable, issue 36)', () => {
    const agentId = 'agt_Canary';
    const canary = (version: number, stableVersion: number) => sampleSpec({ agentId, version, count: 1, stable: sampleSpec({ agentId, version: stableVersion, count: 2 }) });

    it('is aborted by its stable spec: that older spec is held, and the canary version may be reported again', () => {
      const jobs = table();
      jobs.want(spec(agentId, 3));
      jobs.want(canary(4, 3));
      jobs.get(agentId)!.imageReportedFor = 4;
      jobs.want(spec(agentId, 3));
      assert.equal(jobs.get(agentId)!.spec.version, 3);
      assert.equal(jobs.get(agentId)!.spec.stable, undefined);
      assert.equal(jobs.get(agentId)!.imageReportedFor, null);
    });

    it('still ignores any other older spec: a late retry of an earlier deploy, or of an earlier canary', () => {
      const jobs = table();
      jobs.want(canary(4, 3));
      jobs.want(spec(agentId, 2));
      jobs.want(canary(3, 2));
      assert.equal(jobs.get(agentId)!.spec.version, 4);
      assert.equal(jobs.get(agentId)!.spec.stable?.version, 3);
      jobs.want(spec(agentId, 4));
      jobs.want(spec(agentId, 3));
      assert.equal(jobs.get(agentId)!.spec.version, 4, 'once promoted, the old stable version is just older');
    });
  });
});
