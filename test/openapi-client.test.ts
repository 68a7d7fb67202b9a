import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';

const ROOT = resolve(import.meta.dirname, '..');
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

/**
 * What a client author does: generate types from the served document with openapi-typescript,
 * write a program against them with openapi-fetch, type-check it with tsc, and run it. The
 * `@ts-expect-error` lines prove the types are the document's, not `any`.
 */
const PROGRAM = `import createClient from 'openapi-fetch';
import type { operations, paths } from './schema.js';

type Agent = operations['getAgent']['responses'][200]['content']['application/json'];

const client = createClient<paths>({ baseUrl: process.argv[2] });
const fail = (step: string, error: unknown): never => { throw new Error(step + ': ' + JSON.stringify(error)); };

const registered = await client.POST('/auth/register', { body: { email: 'typed-' + Date.now() + '@example.com', password: 'correct horse battery', name: 'Typed Client' } });
const session = registered.data ?? fail('register', registered.error);
const headers = { Authorization: 'Bearer ' + session.token };

const created = await client.POST('/agents', { headers, body: { name: 'typed-client-bot', access: 'public' } });
const id: string = (created.data ?? fail('createAgent', created.error)).id;

// @ts-expect-error replicas is a number in the document
void client.POST('/agents/{id}/deploy', { headers, params: { path: { id } }, body: { replicas: 'two' } });
const deployed = await client.POST('/agents/{id}/deploy', { headers, params: { path: { id } }, body: { replicas: 2 } });
const version: number = (deployed.data ?? fail('deployAgent', deployed.error)).version;

const read = await client.GET('/agents/{id}', { headers, params: { path: { id } } });
const agent: Agent = read.data ?? fail('getAgent', read.error);
// @ts-expect-error an agent has no field the document does not name
void agent.hostname;

const missing = await client.GET('/agents/{id}', { headers, params: { path: { id: 'agt_none' } } });
// The account a request acts in is a header parameter of every authenticated operation.
const account = (id: string) => ({ headers, params: { header: { 'X-Account-Id': id } } });
// @ts-expect-error an account is named by its id, a string
void client.GET('/agents', { headers, params: { header: { 'X-Account-Id': 7 } } });
const listedInAccount = await client.GET('/agents', account(session.user.account_id));
const listedElsewhere = await client.GET('/agents', account('acc_someone_else'));
const api = await client.GET('/version');
console.log(JSON.stringify({
  id, version, url: agent.url, replicas: agent.deploy.replicas, missing: missing.error?.code, api: api.data,
  inAccount: (listedInAccount.data ?? fail('listAgents', listedInAccount.error)).agents.map((listed) => listed.id),
  elsewhere: listedElsewhere.error?.code,
}));
`;

describe('OpenAPI document: a generated client (openapi-typescript + openapi-fetch)', function () {
  this.timeout(120_000);
  let control: TestControl;
  let workDir: string;

  before(async () => {
    control = await startControl();
    workDir = mkdtempSync(join(tmpdir(), 'openapi-client-'));
    // The program imports openapi-fetch and runs with tsx as a client project would, from its own folder.
    symlinkSync(join(ROOT, 'node_modules'), join(workDir, 'node_modules'), 'dir');
  });
  after(async () => {
    await control?.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  // Asynchronous: the control API answering the program runs in this process.
  const run = async (command: string, args: string[]) => {
    try {
      return (await promisify(execFile)(command, args, { cwd: workDir, encoding: 'utf8', timeout: 90_000 })).stdout;
    } catch (error) {
      const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`${command} ${args.join(' ')} failed: ${message}\n${stdout ?? ''}\n${stderr ?? ''}`);
    }
  };

  it('generates, type-checks, and registers, creates, deploys and reads the agent URL, in the account X-Account-Id names', async () => {
    writeFileSync(join(workDir, 'openapi.json'), JSON.stringify(await (await fetch(`${control.baseUrl}/openapi.json`)).json()));
    await run(bin('openapi-typescript'), ['openapi.json', '--output', 'schema.d.ts']);
    writeFileSync(join(workDir, 'program.ts'), PROGRAM);
    writeFileSync(join(workDir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(workDir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, files: ['program.ts'] }),
    );
    await run(bin('tsc'), ['-p', 'tsconfig.json']);

    const output = JSON.parse((await run(process.execPath, ['--import', 'tsx', 'program.ts', control.baseUrl])).trim().split('\n').at(-1)!);
    assert.match(output.id, /^agt_/);
    assert.equal(output.replicas, 2);
    assert.ok(output.version >= 2, `deploy raised the version: ${output.version}`);
    assert.match(output.url, /^https?:\/\/\S+/);
    assert.equal(output.missing, 'NOT_FOUND');
    assert.equal(output.api.api_version, '1');
    assert.deepEqual(output.inAccount, [output.id], 'X-Account-Id naming the own account lists its agent');
    assert.equal(output.elsewhere, 'AUTHORISATION_DENIED');
  });
});
