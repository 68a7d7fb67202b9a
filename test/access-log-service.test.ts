import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { credentials, type ClientWritableStream, type ServiceError } from '@grpc/grpc-js';
import type { Redis } from 'ioredis';
import { systemClock } from '../contract/clock.js';
import { loadAccessLogService } from '../proto/load.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { connectTestRedis, startTestAuthz, type TestAuthz } from './support/edge-authz.js';
import { runReplica } from './support/in-memory-driver.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { scanKeys } from '../control/db/redis.js';
import { RequestFiguresReader } from '../control/edge/request-figures.js';
import { forwardedRequestOf, VERSION_METADATA_KEY } from '../authz/access-log-entry.js';
import { waitFor } from './support/wait.js';

/** google.protobuf.Duration of `ms` milliseconds since the stream started, as Envoy fills the time_to_* fields. */
const sinceStart = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: Math.round((ms % 1000) * 1e6) });

interface EntryInput {
  /** The ext_authz metadata of an allowed request (from a real Check); none for a denial. */
  metadata?: Record<string, { stringValue: string }>;
  status: number;
  /** Upstream timings in ms from the request's start; absent where Envoy sets none. */
  firstTx?: number;
  firstRx?: number;
  lastRx?: number;
  flags?: Record<string, unknown>;
  path?: string;
  requestId?: string;
}

/**
 * An HTTPAccessLogEntry as Envoy's http_grpc logger fills it (envoyproxy/envoy
 * source/extensions/access_loggers/grpc/grpc_access_log_utils.cc,
 * `Utility::extractCommonAccessLogProperties`; http_grpc_access_log_impl.cc, `emitLog`).
 */
function envoyEntry({ metadata, status, firstTx, firstRx, lastRx, flags = {}, path = '/invoke', requestId = randomUUID() }: EntryInput) {
  const upstream = firstTx !== undefined || flags.upstream_connection_failure;
  return {
    common_properties: {
      downstream_remote_address: { socket_address: { address: '203.0.113.7', port_value: 53124 } },
      start_time: { seconds: Math.floor(Date.now() / 1000), nanos: 0 },
      time_to_last_rx_byte: sinceStart(0.3),
      ...(firstTx !== undefined ? { time_to_first_upstream_tx_byte: sinceStart(firstTx), time_to_last_upstream_tx_byte: sinceStart(firstTx) } : {}),
      ...(firstRx !== undefined ? { time_to_first_upstream_rx_byte: sinceStart(firstRx), time_to_first_downstream_tx_byte: sinceStart(firstRx + 0.1) } : {}),
      ...(lastRx !== undefined ? { time_to_last_upstream_rx_byte: sinceStart(lastRx), time_to_last_downstream_tx_byte: sinceStart(lastRx + 0.1) } : {}),
      ...(upstream ? { upstream_remote_address: { socket_address: { address: '127.0.0.1', port_value: 9 } }, upstream_cluster: 'agents' } : {}),
      response_flags: flags,
      ...(metadata ? { metadata: { filter_metadata: { 'envoy.filters.http.ext_authz': { fields: { ...metadata, ext_authz_duration: { numberValue: 1 } } } } } } : {}),
    },
    protocol_version: 'HTTP11',
    request: { scheme: 'http', authority: 'agent.example', path, request_method: 'POST', request_id: requestId },
    response: { response_code: { value: status } },
  };
}

/**
 * authz's access-log service (authz/access-log-service.ts) fed real StreamAccessLogs
 * messages, encoded from Envoy's own protos, the way Envoy's http_grpc logger sends them;
 * then the agent's figures read as a user reads them, through GET /agents/{id}/metrics.
 */
describeOnEachAuthzServer('request figures from Envoy access logs', function (server) {
  this.timeout(60_000);
  let control: TestControl;
  let authzRedis: Redis;
  let authz: TestAuthz;

  before(async () => {
    control = await startControl();
    authzRedis = connectTestRedis(control.config.redisKeyPrefix);
    authz = await startTestAuthz({ redis: authzRedis, clock: systemClock, agentDomain: control.config.agentUrl.domain, server });
  });
  after(async () => {
    await authz?.close();
    authzRedis?.disconnect();
    await control?.close();
  });

  /** A StreamAccessLogs call to `address`, as Envoy opens one per worker thread. */
  function openStream(address = authz.authz.grpcAddress) {
    const client = new (loadAccessLogService().Client)(address, credentials.createInsecure()) as unknown as {
      StreamAccessLogs(callback: (error: ServiceError | null, response?: unknown) => void): ClientWritableStream<unknown>;
      close(): void;
    };
    let call!: ClientWritableStream<unknown>;
    const answered = new Promise((resolve, reject) => {
      call = client.StreamAccessLogs((error, response) => (error ? reject(error) : resolve(response)));
    });
    return { call, answered, close: () => client.close() };
  }

  /** A public agent with a replica in the projection, and the metadata a real Check gives its requests. */
  async function allowedAgent(token: string) {
    const created = await control.request('POST', '/agents', { token, body: { name: 'logged', api_key: 'sk-test', access: 'public', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const host = new URL(created.body.url).hostname;
    await runReplica(control, { id: created.body.id, slug: host.split('.')[0]! }, '127.0.0.1:9');
    const check = await authz.client.check({ host, path: '/invoke', method: 'POST' });
    assert.equal(check.http_response, 'ok_response', JSON.stringify(check));
    const metadata = Object.fromEntries(Object.entries(check.dynamic_metadata!.fields).map(([key, value]) => [key, { stringValue: value.stringValue }]));
    return { id: created.body.id as string, metadata };
  }

  it('counts what the agent answered, its 5xx and upstream times, and nothing authz denied or Envoy failed', async () => {
    const { token } = await control.signUp();
    const agent = await allowedAgent(token);
    const other = await allowedAgent(token);
    assert.equal(agent.metadata.agent_id?.stringValue, agent.id, "the Check's metadata names the agent");

    const stream = openStream();
    // Envoy names itself on a stream's first message only, then sends batches.
    stream.call.write({
      identifier: { node: { id: 'envoy-edge-1', cluster: 'platform-edge' }, log_name: 'agent_requests' },
      http_logs: {
        log_entry: [
          envoyEntry({ metadata: agent.metadata, status: 200, firstTx: 1, firstRx: 2.5, lastRx: 3 }), // 2 ms upstream
          envoyEntry({ metadata: agent.metadata, status: 200, firstTx: 1, firstRx: 4, lastRx: 5 }), // 4 ms
          // authz's 401: a local reply flagged UAEX, no metadata, never upstream.
          envoyEntry({ status: 401, flags: { unauthorized_details: { reason: 'EXTERNAL_SERVICE' } } }),
          // Allowed, but the replica refused the connection: Envoy's 502 (UF), not the agent's answer.
          envoyEntry({ metadata: agent.metadata, status: 502, flags: { upstream_connection_failure: true } }),
        ],
      },
    });
    stream.call.write({
      http_logs: {
        log_entry: [
          envoyEntry({ metadata: agent.metadata, status: 200, firstTx: 2, firstRx: 10 }), // cut after its head: 8 ms, to the first byte
          envoyEntry({ metadata: agent.metadata, status: 503, firstTx: 1, firstRx: 20, lastRx: 21 }), // the agent's own 503, 20 ms
          envoyEntry({ metadata: other.metadata, status: 500, firstTx: 1, firstRx: 2, lastRx: 400 }), // another agent's
          envoyEntry({ metadata: { agent_id: { stringValue: 'agt_{bad}' } }, status: 200, firstTx: 1, firstRx: 2, lastRx: 3 }),
        ],
      },
    });
    stream.call.end();
    assert.deepEqual(await stream.answered, {}, 'the stream is answered once Envoy ends it');
    stream.close();

    const sample = await waitFor('the figures flushed to Redis', async () => {
      const response = await control.request('GET', `/agents/${agent.id}/metrics`, { token });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body.request_count > 0 ? response.body : undefined;
    });
    assert.equal(sample.request_count, 4);
    assert.equal(sample.error_count, 1);
    assert.equal(sample.avg_latency_ms, (2 + 4 + 8 + 20) / 4);
    // Buckets (1, 2.5], (2.5, 5], (5, 10], (10, 25], one each: rank 3.8 is 0.8 into (10, 25].
    assert.equal(sample.p95_latency_ms, 22);

    const others = await control.request('GET', `/agents/${other.id}/metrics`, { token });
    assert.equal(others.body.request_count, 1);
    assert.equal(others.body.error_count, 1);
  });

  it("counts a canary's requests in the totals and again as the canary's; no version or an unknown one is stable", async () => {
    const { token } = await control.signUp();
    const agent = await allowedAgent(token);
    // Whatever version the real Check named, the three versions entries can carry.
    const { [VERSION_METADATA_KEY]: _checked, ...unversioned } = agent.metadata;
    const as = (version: string) => ({ ...unversioned, [VERSION_METADATA_KEY]: { stringValue: version } });

    const stream = openStream();
    stream.call.write({
      identifier: { node: { id: 'envoy-edge-1' }, log_name: 'agent_requests' },
      http_logs: {
        log_entry: [
          envoyEntry({ metadata: as('canary'), status: 200, firstTx: 1, firstRx: 2, lastRx: 3 }), // canary, 2 ms
          envoyEntry({ metadata: as('canary'), status: 503, firstTx: 1, firstRx: 20, lastRx: 21 }), // canary, its 503, 20 ms
          envoyEntry({ metadata: as('stable'), status: 200, firstTx: 1, firstRx: 4, lastRx: 5 }), // stable, 4 ms
          envoyEntry({ metadata: unversioned, status: 500, firstTx: 1, firstRx: 8, lastRx: 9 }), // from an authz before canaries: stable, 8 ms
          envoyEntry({ metadata: as('Canary'), status: 200, firstTx: 1, firstRx: 10, lastRx: 11 }), // not exactly `canary`: stable, 10 ms
        ],
      },
    });
    stream.call.end();
    await stream.answered;
    stream.close();

    const reader = new RequestFiguresReader(authzRedis, systemClock);
    const figures = await waitFor('the figures flushed to Redis', async () => {
      const read = await reader.byVersion(agent.id);
      return read.stable.requestCount + read.canary.requestCount === 5 ? read : undefined;
    });
    assert.deepEqual(
      [figures.canary.requestCount, figures.canary.errorCount, figures.canary.avgLatencyMs],
      [2, 1, (2 + 20) / 2],
      "the canary's two",
    );
    assert.deepEqual(
      [figures.stable.requestCount, figures.stable.errorCount, figures.stable.avgLatencyMs],
      [3, 1, (4 + 8 + 10) / 3],
      'stable, unversioned and unknown: the other three',
    );
    const totals = await control.request('GET', `/agents/${agent.id}/metrics`, { token });
    assert.equal(totals.body.request_count, 5, 'the metrics every user sees count every version');
    assert.equal(totals.body.error_count, 2);
    // The agent's seconds (one, unless the batch straddled a second): totals and canary_ fields in the same hashes.
    const stored = await Promise.all((await scanKeys(authzRedis, `edge:requests:{${agent.id}}:*`)).map((key) => authzRedis.hgetall(key)));
    const sum = (field: string) => stored.reduce((total, hash) => total + Number(hash[field] ?? 0), 0);
    assert.deepEqual([sum('count'), sum('errors'), sum('canary_count'), sum('canary_errors')], [5, 2, 2, 1]);
  });

  it("starts or continues each allowed request's trace, and makes an invoke's edge span from its entry, stored as its trace's root", async () => {
    const { token } = await control.signUp();
    const agent = await allowedAgent(token);
    const host = (await control.request('GET', `/agents/${agent.id}`, { token })).body.url.replace(/^https?:\/\//, '').split('/')[0];
    const traceOf = async (headers: Record<string, string>) => {
      const check = await authz.client.check({ host, path: '/invoke', method: 'POST', headers });
      const fields = check.dynamic_metadata!.fields;
      const metadata = Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, { stringValue: value.stringValue }]));
      const sent = check.ok_response!.headers.find((option: { header: { key: string } }) => option.header.key === 'traceparent');
      return { metadata, traceparent: sent?.header.value, traceId: fields.trace_id!.stringValue, spanId: fields.span_id!.stringValue, parent: fields.parent_span_id!.stringValue };
    };
    // The caller's trace, continued: the replica is told the edge's span as its parent.
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const continued = await traceOf({ traceparent: `00-${callerTrace}-00f067aa0ba902b7-01`, 'x-request-id': randomUUID() });
    assert.deepEqual([continued.traceId, continued.parent], [callerTrace, '00f067aa0ba902b7']);
    assert.equal(continued.traceparent, `00-${callerTrace}-${continued.spanId}-01`);
    // No traceparent: the edge starts the trace, named by Envoy's request id.
    const requestId = randomUUID();
    const started = await traceOf({ 'x-request-id': requestId });
    assert.deepEqual([started.traceId, started.parent], [requestId.replaceAll('-', ''), '']);
    assert.equal(started.traceparent, `00-${started.traceId}-${started.spanId}-01`);

    const stream = openStream();
    stream.call.write({
      identifier: { node: { id: 'envoy-edge-1' }, log_name: 'agent_requests' },
      http_logs: {
        log_entry: [
          envoyEntry({ metadata: continued.metadata, status: 200, firstTx: 1, firstRx: 20, lastRx: 30 }),
          // Envoy's own 502: the replica refused the connection; the edge's span is the trace's error.
          envoyEntry({ metadata: started.metadata, status: 502, flags: { upstream_connection_failure: true }, requestId }),
          // Not the invoke path: counted in the figures, no span.
          envoyEntry({ metadata: (await traceOf({})).metadata, status: 200, firstTx: 1, firstRx: 2, lastRx: 3, path: '/health' }),
        ],
      },
    });
    stream.call.end();
    await stream.answered;
    stream.close();

    const invocations = await waitFor('the edge spans taken in', async () => {
      await control.control.loops.edgeSpans.runOnce();
      const list = await control.request('GET', `/agents/${agent.id}/invocations`, { token });
      return list.body.total === 2 ? list.body.invocations : undefined;
    });
    const byId = new Map(invocations.map((item: { invocation_id: string }) => [item.invocation_id, item]));
    assert.deepEqual([...byId.keys()].sort(), [callerTrace, started.traceId].sort());

    const first = (await control.request('GET', `/agents/${agent.id}/invocations/${callerTrace}`, { token })).body;
    assert.equal(first.invocation.status, 'ok');
    const [edgeSpan] = first.spans;
    assert.deepEqual([edgeSpan.span_id, edgeSpan.parent_span_id, edgeSpan.name], [continued.spanId, '00f067aa0ba902b7', 'POST /invoke']);
    // From the request's start to the answer's last byte out (time_to_last_downstream_tx_byte: 30.1 ms).
    assert.ok(Math.abs(edgeSpan.duration_ms - 30.1) <= 0.5, `duration ${edgeSpan.duration_ms}`);
    assert.deepEqual([edgeSpan.attributes['http.request.method'], edgeSpan.attributes['url.path'], edgeSpan.attributes['http.response.status_code']], ['POST', '/invoke', 200]);

    const second = (await control.request('GET', `/agents/${agent.id}/invocations/${started.traceId}`, { token })).body;
    assert.equal(second.invocation.status, 'error');
    assert.deepEqual([second.spans[0].parent_span_id, second.spans[0].attributes['platform.request_id']], [null, requestId]);
  });

  it('answers an open stream when authz stops, so its shutdown does not wait on Envoy', async () => {
    const redis = connectTestRedis(control.config.redisKeyPrefix);
    const own = await startTestAuthz({ redis, clock: systemClock, agentDomain: control.config.agentUrl.domain, server });
    const stream = openStream(own.authz.grpcAddress);
    try {
      const agentId = `agt_shutdown${Date.now()}`;
      stream.call.write({
        identifier: { node: { id: 'envoy-edge-1' }, log_name: 'agent_requests' },
        http_logs: { log_entry: [envoyEntry({ metadata: { agent_id: { stringValue: agentId } }, status: 200, firstTx: 1, firstRx: 2, lastRx: 3 })] },
      });
      // Counted, so the stream is open on the server.
      await waitFor('the entry counted', async () => ((await scanKeys(redis, `edge:requests:{${agentId}}:*`)).length > 0 ? true : undefined), 10_000);
      await own.close();
      assert.deepEqual(await stream.answered, {}, 'an OK answer, not a cancelled call');
    } finally {
      stream.close();
      redis.disconnect();
    }
  });
});

/** Which version an entry's request went to: pure, so once, not per authz server. */
describe('access-log entries: the version', () => {
  it('reads `canary` from the version metadata of an entry, and anything else as stable', () => {
    const entry = (fields: Record<string, { stringValue: string }>) =>
      forwardedRequestOf({
        common_properties: {
          metadata: { filter_metadata: { 'envoy.filters.http.ext_authz': { fields: { agent_id: { stringValue: 'agt_v1' }, ...fields } } } },
          time_to_first_upstream_tx_byte: sinceStart(1),
          time_to_first_upstream_rx_byte: sinceStart(2),
        },
        response: { response_code: { value: 200 } },
      });
    assert.equal(entry({ version: { stringValue: 'canary' } })?.canary, true);
    for (const version of ['stable', '', 'CANARY', 'beta']) assert.equal(entry({ version: { stringValue: version } })?.canary, false, version);
    assert.equal(entry({})?.canary, false, 'no version: an entry from before canaries, stable');
  });
});
