import { lineFields } from '../log-levels.js';
import type { LogEntry } from '../../domain/log-entry.js';

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) /;
// A partial line (written without a newline) is printed by `podman logs -t` with the
// next chunk's timestamp glued on; removing those stitches the line back together.
const EMBEDDED_TIMESTAMP = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{1,9}(?:Z|[+-]\d{2}:\d{2}) /g;

/**
 * Parses `podman logs --timestamps` output of one stream of one replica. Each entry's
 * id is its timestamp in nanoseconds (zero-padded, so ids sort as strings), the
 * replica and a sequence number, which orders entries across replicas for SSE resume.
 */
export function parseLogOutput(output: string, agentId: string, replicaId: string, source: 'stdout' | 'stderr'): LogEntry[] {
  const entries: LogEntry[] = [];
  let previousNanos = '';
  let sequence = 0;
  for (const line of output.split('\n')) {
    const match = TIMESTAMP.exec(line);
    if (!match) continue;
    const [prefix, seconds, fraction = '', zone] = match;
    const millis = Date.parse(`${seconds}${zone}`);
    const nanos = (BigInt(millis) * 1_000_000n + BigInt(fraction.padEnd(9, '0'))).toString().padStart(20, '0');
    sequence = nanos === previousNanos ? sequence + 1 : 0;
    previousNanos = nanos;
    const message = line.slice(prefix.length).replace(EMBEDDED_TIMESTAMP, '');
    const { level, invocation_id } = lineFields(message, source);
    entries.push({
      id: `${nanos}-${replicaId}-${source === 'stdout' ? 'o' : 'e'}${sequence}`,
      agent_id: agentId,
      replica_id: replicaId,
      timestamp: new Date(millis + Number(fraction.padEnd(3, '0').slice(0, 3))).toISOString(),
      level,
      message,
      source,
      invocation_id,
    });
  }
  return entries;
}
