import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { EXAMPLE_AGENT, EXAMPLE_PATH, renderExample } from '../scripts/nomad-example.js';

describe('nomad-jobs/agent.example.json', () => {
  it('is exactly the job the driver generates for the sample agent (run `npm run nomad:example` when this fails)', () => {
    assert.equal(readFileSync(EXAMPLE_PATH, 'utf8'), renderExample());
  });

  it('is the job of a real agent id and slug, as the control API makes them', () => {
    assert.match(EXAMPLE_AGENT.agentId, /^agt_[0-9A-Za-z]{20}$/, 'ids are agt_ and 20 base62 characters (docs/decisions.md)');
    assert.match(EXAMPLE_AGENT.slug, /^[a-z0-9-]+-[a-z0-9]{8}$/, 'slugs end in 8 random characters (control/domain/slug.ts)');
  });

  it('carries no secret value: the model key is only in the Variable', () => {
    const text = readFileSync(EXAMPLE_PATH, 'utf8');
    for (const value of Object.values(EXAMPLE_AGENT.secretEnv)) assert.equal(text.includes(value), false);
    assert.match(text, /nomadVar \\"nomad\/jobs\/agent-agt_7Qm2XbR9kLp4TzW1nVc8\\"/);
  });
});
