import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { concatenatedJsonArrays } from '../control/domain/agent-session.js';

/** A session read joins its sealed base and appends as text, never parsing the messages (control/domain/agent-session.ts). */
describe('sessions: joining stored message arrays as text', function () {
  it('gives the items of every array in order, as one JSON array, with empty arrays anywhere', function () {
    assert.equal(concatenatedJsonArrays(['[]']), '[]');
    assert.equal(concatenatedJsonArrays(['[]', '[]']), '[]');
    assert.equal(concatenatedJsonArrays(['[]', '[{"a":1}]', '[]', '[2,"x"]']), '[{"a":1},2,"x"]');
    assert.equal(concatenatedJsonArrays(['[1]', '[]']), '[1]');
  });

  it('reads back as the arrays concatenated, for any JSON messages as JSON.stringify writes them', function () {
    fc.assert(
      fc.property(fc.array(fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }), { minLength: 1, maxLength: 17 }), (arrays) => {
        const joined = concatenatedJsonArrays(arrays.map((array) => JSON.stringify(array)));
        assert.deepEqual(JSON.parse(joined), JSON.parse(JSON.stringify(arrays.flat())));
      }),
      { numRuns: 300 },
    );
  });
});
