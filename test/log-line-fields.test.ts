import assert from 'node:assert/strict';
import type { LogEntry } from '../control/domain/log-entry.js';
import { lineFields, selectEntries } from '../control/orchestrator/log-levels.js';
import { toEntries } from '../control/orchestrator/nomad/logs.js';
import { parseLogOutput } from '../control/orchestrator/podman/log-lines.js';

/**
 * What a log entry takes from its line (control/orchestrator/log-levels.ts), without a
 * replica: the level, and the invocation of a JSON line's `trace_id`, which both drivers
 * keep and the log query filters by.
 */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const line = (fields: Record<string, unknown>) => JSON.stringify({ level: 'info', message: 'm', ...fields });

describe('log line fields', () => {
  it('takes a JSON line’s trace_id as its invocation id', () => {
    assert.deepEqual(lineFields(line({ trace_id: TRACE_ID }), 'stdout'), { level: 'info', invocation_id: TRACE_ID });
    assert.deepEqual(lineFields(line({ level: 50, trace_id: TRACE_ID }), 'stdout'), { level: 'error', invocation_id: TRACE_ID });
  });

  it('ignores a trace_id that is not 32 lowercase hex digits, and lines without one', () => {
    for (const traceId of [TRACE_ID.toUpperCase(), TRACE_ID.slice(1), `${TRACE_ID}0`, `${TRACE_ID.slice(1)}g`, ` ${TRACE_ID.slice(1)}`, 42, null, [TRACE_ID], { id: TRACE_ID }]) {
      assert.equal(lineFields(line({ trace_id: traceId }), 'stdout').invocation_id, null, JSON.stringify(traceId));
    }
    assert.equal(lineFields(line({}), 'stdout').invocation_id, null);
    assert.equal(lineFields(`trace_id=${TRACE_ID}`, 'stdout').invocation_id, null, 'a text line declares nothing');
    assert.equal(lineFields(`{"trace_id":"${TRACE_ID}"`, 'stdout').invocation_id, null, 'nor does broken JSON');
  });

  it('reads the level by name or pino number, else by stream, and no prototype member as a level', () => {
    assert.equal(lineFields(line({ level: 'WARNING' }), 'stderr').level, 'warn');
    assert.equal(lineFields(line({ level: 20 }), 'stderr').level, 'debug');
    assert.equal(lineFields(line({ level: 'constructor' }), 'stdout').level, 'info');
    assert.equal(lineFields(line({ level: 35 }), 'stderr').level, 'error');
    assert.equal(lineFields('booting', 'stderr').level, 'error');
  });

  it('is kept by both drivers', () => {
    const [podman] = parseLogOutput(`2026-11-27T08:00:00.000000001Z ${line({ trace_id: TRACE_ID })}\n`, 'agt_1', 'r1', 'stdout');
    assert.equal(podman?.invocation_id, TRACE_ID);
    const [nomad] = toEntries([{ line: line({ trace_id: TRACE_ID }), file: 0, offset: 0 }], 'agt_1', { ID: 'alloc-1', CreateTime: 1 }, 'stdout', new Date(0));
    assert.equal(nomad?.invocation_id, TRACE_ID);
  });

  it('filters a query by invocation, with its level and limit', () => {
    const entry = (id: string, level: LogEntry['level'], invocation: string | null): LogEntry => ({
      id, agent_id: 'agt_1', replica_id: 'r1', timestamp: new Date(0).toISOString(), level, message: id, source: 'stdout', invocation_id: invocation,
    });
    const entries = [entry('1', 'info', TRACE_ID), entry('2', 'warn', null), entry('3', 'warn', TRACE_ID), entry('4', 'error', 'b'.repeat(32)), entry('5', 'debug', TRACE_ID)];
    const ids = (query: Parameters<typeof selectEntries>[1]) => selectEntries(entries, query).map((e) => e.id);

    assert.deepEqual(ids({ limit: 10, invocationId: TRACE_ID }), ['1', '3', '5']);
    assert.deepEqual(ids({ limit: 10, invocationId: TRACE_ID, level: 'info' }), ['1', '3']);
    assert.deepEqual(ids({ limit: 1, invocationId: TRACE_ID }), ['5']);
    assert.deepEqual(ids({ limit: 10, invocationId: 'c'.repeat(32) }), []);
    assert.deepEqual(ids({ limit: 10 }), ['1', '2', '3', '4', '5']);
  });
});
