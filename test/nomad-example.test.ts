import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { EXAMPLE_AGENT, EXAMPLE_PATH, renderExample } from '../scripts/nomad-example.js';

describe('nomad-jobs/agent.example.json', () => {
  it('is exactly the job the driver generates for the sample agent (run `npm run nomad:example` when this fails)', () => {
    assert.equal(readFileSync(EXAMPLE_PATH, 'utf8'), renderExample());
  });

  it('carries no secret value: the model key is only in the Variable', () => {
    const text = readFileSync(EXAMPLE_PATH, 'utf8');
    for (const value of Object.values(EXAMPLE_AGENT.secretEnv)) assert.equal(text.includes(value), false);
    assert.match(text, /nomadVar \\"nomad\/jobs\/agent-agt_7Qm2XbR9kLp4TzW1nVc8\\"/);
  });
});
