import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { startControl, type TestControl } from './support/control-harness.js';
import { createRunningAgent, execIn, SseReader, waitFor, type SseFrame } from './support/orch-helpers.js';

/**
 * Logs and metrics of real podman replicas through the control API: the lists, their
 * filters and validation, and both server-sent event streams (resume with Last-Event-ID).
 * The test image logs one JSON line at level warn to stdout and "booting" to stderr.
 */

const LOG_FIELDS = ['agent_id', 'invocation_id', 'level', 'message', 'replica_id', 'source', 'timestamp'];
const WARN_LINE = '{"level":"warn","msg":"serving on 8080"}';

const isIsoTimestamp = (value: unknown) => typeof value === 'string' && !Number.isNaN(Date.parse(value)) && new Date(value).toISOString() === value;

/** Writes a line to the replica's stdout, as its main process would. */
async function emit(control: TestControl, replicaId: string, line: string): Promise<void> {
  const result = await execIn(control, replicaId, `echo '${line}' > /proc/1/fd/1`);
  assert.equal(result.code, 0, `writing to the replica's stdout failed: ${result.stderr}`);
}

describe('orchestration: logs and metrics (podman)', function () {
  this.timeout(120_000);
  let control: TestControl;
  const readers: SseReader[] = [];

  before(async () => {
    control = await startControl({}, { orchestrate: true });
  });

  afterEach(() => {
    for (const reader of readers.splice(0)) reader.close();
  });

  after(async () => {
    await control?.close();
  });

  const openStream = async (path: string, token: string, headers: Record<string, string> = {}) => {
    const reader = await SseReader.open(control.baseUrl + path, { authorization: `Bearer ${token}`, ...headers });
    readers.push(reader);
    return reader;
  };

  const logsOf = async (token: string, agentId: string, query = '') => {
    const response = await control.request('GET', `/agents/${agentId}/logs${query}`, { token });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body as { logs: any[]; total: number };
  };

  /** Waits until the container's start-up lines (stdout and stderr) are in the logs. */
  const bootLogs = (token: string, agentId: string) =>
    waitFor(`the start-up lines of ${agentId} in its logs`, async () => {
      const body = await logsOf(token, agentId);
      const messages = body.logs.map((entry) => entry.message);
      return messages.includes(WARN_LINE) && messages.includes('booting') ? body : undefined;
    });

  describe('GET /agents/{id}/logs', () => {
    it('lists the replicas output with levels and sources, newest last', async () => {
      const { token } = await control.signUp();
      const { id, replica } = await createRunningAgent(control, token);
      const { logs, total } = await bootLogs(token, id);

      assert.ok(total >= logs.length && logs.length >= 2, `total ${total}, ${logs.length} entries`);
      for (const entry of logs) {
        assert.deepEqual(Object.keys(entry).sort(), LOG_FIELDS, `fields of ${JSON.stringify(entry)}`);
        assert.equal(entry.agent_id, id);
        assert.equal(entry.replica_id, replica.id);
        assert.ok(isIsoTimestamp(entry.timestamp), `timestamp ${entry.timestamp}`);
        assert.ok(['debug', 'info', 'warn', 'error'].includes(entry.level));
        assert.ok(['stdout', 'stderr'].includes(entry.source));
      }
      const warn = logs.find((entry) => entry.message === WARN_LINE);
      assert.equal(warn.level, 'warn');
      assert.equal(warn.source, 'stdout');
      assert.equal(warn.invocation_id, null, 'a line without trace_id names no invocation');
      const booting = logs.find((entry) => entry.message === 'booting');
      assert.equal(booting.level, 'error');
      assert.equal(booting.source, 'stderr');

      const marker = `newest-${randomBytes(4).toString('hex')}`;
      await emit(control, replica.id, marker);
      const after = await waitFor('the new line in the logs', async () => {
        const body = await logsOf(token, id);
        return body.logs.some((entry) => entry.message === marker) ? body : undefined;
      });
      const times = after.logs.map((entry) => Date.parse(entry.timestamp));
      assert.deepEqual(times, [...times].sort((a, b) => a - b), 'entries are oldest first');
      const newest = after.logs[after.logs.length - 1];
      assert.equal(newest.message, marker, 'the newest entry is last');
      assert.equal(newest.level, 'info', 'a plain stdout line is info');
      assert.equal(newest.source, 'stdout');

      const one = await logsOf(token, id, '?limit=1');
      assert.equal(one.logs.length, 1);
      assert.deepEqual(one.logs[0], newest, 'limit=1 gives the newest entry');
      assert.equal(one.total, after.total, 'total counts every matching entry, not only those returned');
    });

    it('filters by lowest level and by replica', async () => {
      const { token } = await control.signUp();
      const { id, replica } = await createRunningAgent(control, token);
      await bootLogs(token, id);

      const errors = await logsOf(token, id, '?level=error');
      assert.ok(errors.logs.length >= 1);
      assert.ok(errors.logs.every((entry) => entry.level === 'error'), JSON.stringify(errors.logs));
      assert.ok(errors.logs.some((entry) => entry.message === 'booting'));
      assert.equal(errors.total, errors.logs.length);

      const warnings = await logsOf(token, id, '?level=warn');
      assert.ok(warnings.logs.every((entry) => entry.level === 'warn' || entry.level === 'error'), JSON.stringify(warnings.logs));
      assert.ok(warnings.logs.some((entry) => entry.message === WARN_LINE) && warnings.logs.some((entry) => entry.message === 'booting'));

      const ofReplica = await logsOf(token, id, `?replica_id=${encodeURIComponent(replica.id)}`);
      assert.ok(ofReplica.logs.length >= 2);
      assert.ok(ofReplica.logs.every((entry) => entry.replica_id === replica.id));
      const ofNone = await logsOf(token, id, '?replica_id=no-such-replica');
      assert.deepEqual(ofNone, { logs: [], total: 0 });
    });

    it('names the invocation of a line with a valid trace_id, ignores others, and keeps one invocation with invocation_id', async () => {
      const { token } = await control.signUp();
      const { id, replica } = await createRunningAgent(control, token);
      const invocation = randomBytes(16).toString('hex');
      const traced = `{"level":"error","message":"tool failed","trace_id":"${invocation}"}`;
      const malformed = `{"level":"info","message":"not an id","trace_id":"${invocation.toUpperCase()}"}`;
      const other = `{"level":"info","message":"another invoke","trace_id":"${randomBytes(16).toString('hex')}"}`;
      for (const line of [traced, malformed, other]) await emit(control, replica.id, line);
      const all = await waitFor('the traced lines in the logs', async () => {
        const body = await logsOf(token, id);
        return body.logs.some((entry) => entry.message === other) ? body : undefined;
      });
      const byMessage = (message: string) => all.logs.find((entry) => entry.message === message);
      assert.equal(byMessage(traced).invocation_id, invocation);
      assert.equal(byMessage(traced).level, 'error');
      assert.equal(byMessage(malformed).invocation_id, null, 'an upper-case trace id is no invocation id');
      assert.match(byMessage(other).invocation_id, /^[0-9a-f]{32}$/);

      const ofInvocation = await logsOf(token, id, `?invocation_id=${invocation}`);
      assert.deepEqual(ofInvocation.logs.map((entry) => entry.message), [traced]);
      assert.equal(ofInvocation.total, 1);
      assert.deepEqual(await logsOf(token, id, `?invocation_id=${invocation.toUpperCase()}`), ofInvocation, 'the filter takes either case');
      assert.deepEqual(await logsOf(token, id, `?invocation_id=${invocation}&level=warn`), ofInvocation);
      assert.deepEqual(await logsOf(token, id, `?invocation_id=${'0'.repeat(32)}`), { logs: [], total: 0 });

      const stream = await openStream(`/agents/${id}/logs/stream?invocation_id=${invocation}`, token);
      const frame = await stream.next('the traced line', (f) => f.event === 'log');
      assert.deepEqual(JSON.parse(frame.data), byMessage(traced), 'the stream sends the same entry, with its invocation id');
    });

    it('rejects invalid query values with 422 and hides other accounts agents', async () => {
      const { token } = await control.signUp();
      const { id } = await createRunningAgent(control, token);
      for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'level=verbose', `invocation_id=${'a'.repeat(31)}`, `invocation_id=${'g'.repeat(32)}`, `invocation_id=${'a'.repeat(33)}`]) {
        const response = await control.request('GET', `/agents/${id}/logs?${query}`, { token });
        assert.equal(response.status, 422, `${query}: ${JSON.stringify(response.body)}`);
        assert.equal(response.body.code, 'VALIDATION_ERROR');
        assert.ok(Array.isArray(response.body.details?.errors) && response.body.details.errors.length > 0);
      }
      const limits = await Promise.all(['limit=1', 'limit=1000'].map((q) => control.request('GET', `/agents/${id}/logs?${q}`, { token })));
      assert.deepEqual(limits.map((r) => r.status), [200, 200]);

      const other = await control.signUp();
      for (const path of [`/agents/${id}/logs`, `/agents/${id}/metrics`]) {
        const response = await control.request('GET', path, { token: other.token });
        assert.equal(response.status, 404, path);
        assert.equal(response.body.code, 'NOT_FOUND');
      }
      const unauthenticated = await control.request('GET', `/agents/${id}/logs`);
      assert.equal(unauthenticated.status, 401);
    });
  });

  describe('GET /agents/{id}/logs/stream', () => {
    const logFrames = (reader: SseReader) => reader.frames.filter((frame) => frame.event === 'log');

    it('streams log events with ids, follows new lines, resumes after Last-Event-ID and ends when the agent is deleted', async () => {
      const { token } = await control.signUp();
      const { id, replica } = await createRunningAgent(control, token);
      await bootLogs(token, id);

      const first = await openStream(`/agents/${id}/logs/stream`, token);
      assert.equal(first.status, 200);
      assert.match(first.contentType, /^text\/event-stream/);
      await first.next('the booting line', (frame) => frame.event === 'log' && JSON.parse(frame.data).message === 'booting');
      for (const frame of logFrames(first)) {
        assert.ok(frame.id, 'every log event has an id');
        const entry = JSON.parse(frame.data);
        assert.deepEqual(Object.keys(entry).sort(), LOG_FIELDS);
        assert.equal(entry.agent_id, id);
      }

      const marker = `streamed-${randomBytes(4).toString('hex')}`;
      await emit(control, replica.id, marker);
      await first.next('the new line', (frame) => frame.event === 'log' && JSON.parse(frame.data).message === marker);
      const seen = logFrames(first);
      assert.ok(seen.length >= 3);
      const ids = seen.map((frame) => frame.id!);
      assert.equal(new Set(ids).size, ids.length, 'no event is sent twice');
      assert.equal(seen.filter((frame) => JSON.parse(frame.data).message === marker).length, 1);

      // Resuming after the first event gives every later one, once, in the same order.
      const resumed = await openStream(`/agents/${id}/logs/stream`, token, { 'last-event-id': ids[0]! });
      assert.equal(resumed.status, 200);
      await resumed.next('the events after the first one', (frame) => frame.id === ids[ids.length - 1]);
      assert.deepEqual(logFrames(resumed).map((frame) => frame.id), ids.slice(1));
      assert.deepEqual(logFrames(resumed).map((frame) => frame.data), seen.slice(1).map((frame) => frame.data));

      // Both streams keep following, without repeating what they sent.
      const later = `later-${randomBytes(4).toString('hex')}`;
      await emit(control, replica.id, later);
      const isLater = (frame: SseFrame) => frame.event === 'log' && JSON.parse(frame.data).message === later;
      await Promise.all([first.next('the later line', isLater), resumed.next('the later line after resuming', isLater)]);
      for (const reader of [first, resumed]) {
        const streamedIds = logFrames(reader).map((frame) => frame.id);
        assert.equal(new Set(streamedIds).size, streamedIds.length, 'no duplicate after following');
      }

      const deleted = await control.request('DELETE', `/agents/${id}`, { token });
      assert.equal(deleted.status, 204);
      await Promise.all([first.ends(), resumed.ends()]);
    });

    it('answers 404 for another account and 422 for an invalid level or invocation id', async () => {
      const { token } = await control.signUp();
      const { id } = await createRunningAgent(control, token);
      const other = await control.signUp();
      for (const path of [`/agents/${id}/logs/stream`, `/agents/${id}/metrics/stream`, '/agents/agt_doesnotexist/logs/stream']) {
        const reader = await openStream(path, other.token);
        assert.equal(reader.status, 404, path);
        assert.equal(JSON.parse(reader.body).code, 'NOT_FOUND');
      }
      for (const query of ['level=verbose', 'limit=0', 'invocation_id=not-an-id']) {
        const invalid = await openStream(`/agents/${id}/logs/stream?${query}`, token);
        assert.equal(invalid.status, 422, query);
        assert.equal(JSON.parse(invalid.body).code, 'VALIDATION_ERROR');
      }
    });
  });

  describe('GET /agents/{id}/metrics', () => {
    it('gives one sample of live CPU and memory averaged over the replicas', async () => {
      const { token } = await control.signUp();
      const { id } = await createRunningAgent(control, token, { deploy: { resources: { memory_mb: 256 } } });
      const response = await control.request('GET', `/agents/${id}/metrics`, { token });
      assert.equal(response.status, 200);
      const sample = response.body;
      assert.deepEqual(
        Object.keys(sample).sort(),
        ['agent_id', 'avg_latency_ms', 'cpu_percent', 'error_count', 'memory_mb', 'memory_percent', 'p95_latency_ms', 'replicas', 'request_count', 'timestamp'],
      );
      assert.equal(sample.agent_id, id);
      assert.ok(isIsoTimestamp(sample.timestamp), `timestamp ${sample.timestamp}`);
      assert.equal(sample.replicas, 1);
      // No request reached it through the edge (test/local-edge-request-figures.test.ts counts some).
      assert.equal(sample.request_count, 0);
      assert.equal(sample.error_count, 0);
      assert.equal(sample.avg_latency_ms, 0);
      assert.equal(sample.p95_latency_ms, 0);
      assert.ok(sample.memory_mb > 0 && sample.memory_mb < 256, `memory_mb ${sample.memory_mb}`);
      assert.ok(sample.cpu_percent >= 0, `cpu_percent ${sample.cpu_percent}`);
      const expectedPercent = (100 * sample.memory_mb) / 256;
      assert.ok(Math.abs(sample.memory_percent - expectedPercent) < 0.1, `memory_percent ${sample.memory_percent}, expected about ${expectedPercent}`);
    });

    it('streams samples every interval seconds and validates the interval', async () => {
      const { token } = await control.signUp();
      const { id } = await createRunningAgent(control, token);
      for (const interval of ['0', '61', 'abc']) {
        // Read as a stream, so a wrongly accepted interval fails here instead of hanging.
        const rejected = await openStream(`/agents/${id}/metrics/stream?interval=${interval}`, token);
        assert.equal(rejected.status, 422, `interval=${interval}`);
        assert.equal(JSON.parse(rejected.body).code, 'VALIDATION_ERROR');
      }

      const reader = await openStream(`/agents/${id}/metrics/stream?interval=1`, token);
      assert.equal(reader.status, 200);
      assert.match(reader.contentType, /^text\/event-stream/);
      await waitFor('two metrics events', async () => (reader.frames.filter((f) => f.event === 'metrics').length >= 2 ? true : undefined), 20_000, 100);
      for (const frame of reader.frames.filter((f) => f.event === 'metrics').slice(0, 2)) {
        const sample = JSON.parse(frame.data);
        assert.equal(sample.agent_id, id);
        assert.equal(sample.replicas, 1);
        assert.ok(sample.memory_mb > 0);
        assert.ok(isIsoTimestamp(sample.timestamp));
      }
      const deleted = await control.request('DELETE', `/agents/${id}`, { token });
      assert.equal(deleted.status, 204);
      await reader.ends();
    });
  });
});
