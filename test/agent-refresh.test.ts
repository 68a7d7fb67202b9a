import assert from 'node:assert/strict';
import { createAgent, expectStatus } from './support/control-api.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { InMemoryDriver } from './support/in-memory-driver.js';
import { waitFor } from './support/wait.js';

/**
 * The way back from the orchestrator (control/services/agent-runner.ts): a submit is
 * followed by exactly one refresh, the one the driver's ReplicasChanged triggers, and that
 * refresh reads the job's status once, handing it to the edge and to Postgres. Counted on
 * the in-memory driver, which tells its listeners once per submit as the real drivers do.
 */
describe('agent refresh: one per submit, one status read each', () => {
  let control: TestControl;
  let driver: InMemoryDriver;
  let observed: string[];

  beforeEach(async () => {
    control = await startControl();
    assert.ok(control.driver instanceof InMemoryDriver);
    driver = control.driver;
    observed = [];
    control.control.services.runner.onAgentObserved(async ({ agent }) => void observed.push(agent.id));
  });
  afterEach(async () => control?.close());

  /** Waits for the steps in flight and the refreshes they triggered (the runner takes no more after). */
  const settled = () => control.control.services.runner.close();

  it('a create that deploys: one submit, one refresh, one status read', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
    await settled();
    assert.equal(driver.submitsOf(agent.id), 1);
    assert.deepEqual(observed, [agent.id], 'one refresh');
    assert.equal(driver.statusReadsOf(agent.id), 1, 'one status read');
  });

  it('a redeploy: one more of each', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
    await waitFor('the first refresh', async () => (observed.length === 1 ? true : undefined));
    expectStatus(await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { replicas: 2 } }), 202);
    await settled();
    assert.equal(driver.submitsOf(agent.id), 2);
    assert.deepEqual(observed, [agent.id, agent.id], 'one refresh per submit');
    assert.equal(driver.statusReadsOf(agent.id), 2, 'one status read per refresh');
  });
});
