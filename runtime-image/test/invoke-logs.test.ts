import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { LogContext } from '../src/log-context.js';
import { createJsonLogger, type Logger } from '../src/logger.js';
import { SpanExporter } from '../src/tracing/span-exporter.js';
import { createInvokeTracer } from '../src/tracing/spans.js';
import { FakeAgentServices } from './helpers/fake-agent-services.js';
import { FakeProvider } from './helpers/fake-provider.js';
import { platformEnv, postInvoke, startRuntime, type TestRuntime } from './helpers/runtime.js';
import { scratchDirectory } from './helpers/scratch-directory.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

describe('log lines of an invoke name its trace (trace_id)', () => {
  let fake: FakeProvider;
  let services: FakeAgentServices;
  let tokenFile: string;
  let runtime: TestRuntime | undefined;

  const start = async (extra: Record<string, string> = {}) => {
    runtime = await startRuntime(platformEnv(fake, 'openai', { AGENT_SERVICES_URL: services.url, AGENT_SERVICES_TOKEN_FILE: tokenFile, ...extra }));
    return runtime;
  };
  const linesOf = (logs: TestRuntime['logs'], message: string) => logs.filter((line) => line['message'] === message);

  before(async () => {
    fake = await FakeProvider.start();
  });
  beforeEach(async () => {
    services = await FakeAgentServices.start(['log-token-1']);
    tokenFile = join(scratchDirectory('invoke-logs-token'), 'token');
    writeFileSync(tokenFile, 'log-token-1\n');
  });
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
    await services.close();
    fake.reset();
  });
  after(() => fake.close());

  it('puts the trace id on every line logged during the invoke, its request line and a session warning, and on no other', async () => {
    const { url } = await start();
    // A limit that outlasts the runtime's patience: the session read fails at once, with a warning.
    services.fail('GET', { status: 429, code: 'RATE_LIMITED', retryAfter: '3600' });

    const response = await postInvoke(url, { input: 'hello', session_id: 'conv-1' }, { traceparent: TRACEPARENT });

    assert.equal(response.status, 503, JSON.stringify(response.body));
    const logs = runtime!.logs;
    const [warning] = linesOf(logs, 'agent services could not serve a session');
    assert.equal(warning?.['trace_id'], TRACE_ID, JSON.stringify(logs));
    const [request] = linesOf(logs, 'request');
    assert.equal(request?.['trace_id'], TRACE_ID, JSON.stringify(logs));
    const others = logs.filter((line) => line !== warning && line !== request);
    assert.deepEqual(others.filter((line) => 'trace_id' in line), []);
  });

  it('names the trace the runtime started when the caller sent none: the one in its traceparent answer', async () => {
    const { url } = await start();
    fake.reply({ text: 'hi' });

    const response = await postInvoke(url, { input: 'hello' });

    assert.equal(response.status, 200);
    const traceId = response.headers.get('traceparent')?.split('-')[1];
    assert.match(traceId ?? '', /^[0-9a-f]{32}$/);
    assert.equal(linesOf(runtime!.logs, 'request')[0]?.['trace_id'], traceId);
  });

  it('names no trace with RUNTIME_TRACES=off, not even the caller traceparent one', async () => {
    const { url } = await start({ RUNTIME_TRACES: 'off' });
    fake.reply({ text: 'hi' });

    const response = await postInvoke(url, { input: 'hello' }, { traceparent: TRACEPARENT });

    assert.equal(response.status, 200);
    const [request] = linesOf(runtime!.logs, 'request');
    assert.ok(request);
    assert.equal('trace_id' in request, false, JSON.stringify(request));
  });
});

describe('LogContext', () => {
  const capture = () => {
    const lines: string[] = [];
    const context = new LogContext();
    const logger = createJsonLogger((line) => lines.push(line), 'debug', { now: () => 0 }, context);
    return { context, logger, logged: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
  };

  it('reaches a line logged after awaits and through a global hook, keeps concurrent invokes apart, and ends with the invoke', async () => {
    const { context, logger, logged } = capture();
    // As the ai SDK's AI_SDK_LOG_WARNINGS: a hook set once, called from deep inside a model call.
    const hook = (message: string) => logger.warn(message);
    const invoke = (traceId: string, name: string) =>
      context.withTrace(traceId, async () => {
        await nextTurn();
        hook(`${name} warned`);
        await new Promise((resolve) => setTimeout(resolve, 5));
        logger.info(`${name} done`);
      });

    await Promise.all([invoke(TRACE_ID, 'first'), invoke('a'.repeat(32), 'second')]);
    logger.info('between invokes');

    const traceOf = Object.fromEntries(logged().map((line) => [line['message'], line['trace_id']]));
    assert.deepEqual(traceOf, {
      'first warned': TRACE_ID,
      'second warned': 'a'.repeat(32),
      'first done': TRACE_ID,
      'second done': 'a'.repeat(32),
      'between invokes': undefined,
    });
  });

  it('leaves the trace off the exporter warning of spans dropped, which are of many invokes', async () => {
    const { context, logger, logged } = capture();
    const exporter = exporterWith(logger, 1);
    const tracer = createInvokeTracer({ agentId: 'agt_1', agentName: 'agent', providerName: 'openai', recordContent: false, sink: exporter });

    context.withTrace(TRACE_ID, () => {
      logger.info('in the invoke');
      for (let i = 0; i < 2; i++) tracer.startInvoke({ parent: undefined, requestId: undefined })!.root.end();
    });

    const [inInvoke, dropped] = logged();
    assert.equal(inInvoke?.['trace_id'], TRACE_ID);
    assert.equal(dropped?.['message'], 'trace spans dropped');
    assert.equal('trace_id' in dropped!, false, JSON.stringify(dropped));
  });
});

function exporterWith(logger: Logger, maxQueuedSpans: number): SpanExporter {
  return new SpanExporter({
    url: 'http://receiver/v1/traces',
    token: { current: async () => 'token', reload: async () => 'token' },
    fetch: async () => new Response('{}', { status: 200 }),
    logger,
    clock: { now: () => 0 },
    origin: { serviceName: 'agent', agentId: 'agt_1' },
    maxQueuedSpans,
    timeoutMs: 1000,
  });
}
