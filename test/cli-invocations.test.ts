import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser } from './support/cli-runner.js';

/** A table agentctl printed, as rows of cells: columns are two spaces or more apart. */
const rowsOf = (text: string) => text.trim().split('\n').map((line) => line.trimEnd().split(/\s{2,}/));

/**
 * `agentctl invocations list|get` (issue 38) against the real control API, with a trace
 * sent as a replica sends it: OTLP/HTTP JSON to the agent services with a replica token.
 */
describe('agentctl invocations', function () {
  this.timeout(120_000);
  let control: TestControl;
  let user: CliUser;
  let ownerToken: string;

  before(async () => {
    control = await startControl({});
  });
  beforeEach(async () => {
    ownerToken = (await control.signUp()).token;
    user = new CliUser({ AGENTCTL_API_URL: control.baseUrl, AGENTCTL_TOKEN: ownerToken });
  });
  afterEach(() => rmSync(user.configHome, { recursive: true, force: true }));
  after(() => control?.close());

  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  const nanos = (at: number) => String(BigInt(at) * 1_000_000n);
  const attributes = (values: Record<string, string | number>) =>
    Object.entries(values).map(([key, value]) => ({ key, value: typeof value === 'number' ? { intValue: String(value) } : { stringValue: value } }));

  /** An invoke as the default runtime traces it: the invoke, a model call, a tool call, a model call. */
  async function sendInvoke(agentId: string, start: number): Promise<string> {
    const traceId = hex(16);
    const rootId = hex(8);
    const span = (name: string, spanId: string, parent: string, at: number, ms: number, values: Record<string, string | number>) => ({
      traceId, spanId, parentSpanId: parent, name, kind: 1, startTimeUnixNano: nanos(at), endTimeUnixNano: nanos(at + ms), attributes: attributes(values), status: { code: 1 },
    });
    const chat = (at: number, input: number, output: number) =>
      span('chat gpt-4o', hex(8), rootId, at, 300, { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o', 'gen_ai.usage.input_tokens': input, 'gen_ai.usage.output_tokens': output });
    const spans = [
      span('invoke_agent helper', rootId, '', start, 1000, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': 'conv-7' }),
      chat(start + 10, 100, 20),
      span('execute_tool add', hex(8), rootId, start + 320, 40, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'add' }),
      chat(start + 370, 300, 50),
    ];
    const response = await fetch(`${control.agentServicesUrl}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${control.mintAgentToken(agentId)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'agent-runtime' }, spans }] }] }),
    });
    assert.equal(response.status, 200, await response.text());
    return traceId;
  }

  it('refuses a missing argument or an id of "." or ".." with exit 2, before any request', async () => {
    for (const args of [['invocations', 'list'], ['invocations', 'get', 'helper'], ['invocations', 'get', 'helper', '..']]) {
      const result = await user.run(args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    }
  });

  it('lists invocations newest first with tokens, cost and tool calls, filters them, and shows one as a waterfall of its spans', async () => {
    const created = await user.json(['agents', 'create', '--name', 'helper']);
    const slug = new URL(created.url).hostname.split('.')[0]!;
    const start = control.clock.now().getTime() - 60_000;
    const older = await sendInvoke(created.id, start);
    const newer = await sendInvoke(created.id, start + 5_000);

    const listed = await user.run(['invocations', 'list', slug]);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = rowsOf(listed.stdout);
    assert.deepEqual(rows[0], ['INVOCATION', 'STARTED', 'TOOK', 'STATUS', 'SESSION', 'MODELS', 'TOKENS', 'COST', 'TOOLS']);
    assert.deepEqual(rows.slice(1).map((row) => row[0]), [newer, older], 'newest first');
    // gpt-4o's default price: $2.50 in and $10 out per million tokens.
    const cost = `$${((400 * 2.5 + 70 * 10) / 1e6).toFixed(6)}`;
    assert.deepEqual(rows[1]!.slice(2), ['1000 ms', 'ok', 'conv-7', 'gpt-4o', '400 in, 70 out', cost, '1']);
    const api = await control.request('GET', `/agents/${created.id}/invocations`, { token: ownerToken });
    assert.deepEqual(await user.json(['invocations', 'list', 'helper']), api.body);

    const failed = await user.run(['invocations', 'list', slug, '--status', 'error']);
    assert.equal(failed.code, 0, failed.stderr);
    assert.deepEqual(rowsOf(failed.stdout).slice(1), []);
    assert.match(failed.stderr, /no traced invokes that match/);

    const shown = await user.run(['invocations', 'get', slug, newer]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`invocation\\s+${newer}`));
    const spanRows = rowsOf(shown.stdout.split(/\n\s*\n/)[1]!);
    assert.deepEqual(spanRows.map((row) => row.slice(0, 3)), [
      ['SPAN', 'AT', 'TOOK'],
      ['invoke_agent helper', '+0 ms', '1000 ms'],
      ['└ chat gpt-4o', '+10 ms', '300 ms'],
      ['└ execute_tool add', '+320 ms', '40 ms'],
      ['└ chat gpt-4o', '+370 ms', '300 ms'],
    ]);
    assert.deepEqual(spanRows[2]!.slice(3), ['ok', '100 in, 20 out', `$${((100 * 2.5 + 20 * 10) / 1e6).toFixed(6)}`]);

    const unknown = await user.run(['invocations', 'get', slug, hex(16)]);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /NOT_FOUND|not found/i);
  });
});
