import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { OpenApiChecker } from './support/openapi-checker.js';

describe('OpenAPI document: examples', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => {
    await control?.close();
  });

  it('shows an example of every request body and 2xx response body, each valid against its schema', async () => {
    const response = await control.request('GET', '/openapi.json');
    expectStatus(response, 200);
    assert.deepEqual(new OpenApiChecker(response.body).exampleProblems(), []);
  });

  it('reports a missing example and one its schema refuses', () => {
    const Thing = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    const document = {
      openapi: '3.1.0',
      paths: {
        '/things': {
          post: {
            requestBody: { content: { 'application/json': { schema: Thing } } },
            responses: { 201: { description: 'Created', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
          },
        },
      },
      components: { schemas: { Thing: { ...Thing, examples: [{ name: 7 }] } } },
    };
    const problems = new OpenApiChecker(document).exampleProblems();
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems[0]!, /requestBody\/content\/application~1json has no example/);
    assert.match(problems[1]!, /#\/components\/schemas\/Thing\/examples\/0 does not match its schema: example\/name must be string/);
  });
});
