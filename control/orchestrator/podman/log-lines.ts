import type { LogEntry, LogLevel } from '../types.js';

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) /;
// A partial line (written without a newline) is printed by `podman logs -t` with the
// next chunk's timestamp glued on; removing those stitches the line back together.
const EMBEDDED_TIMESTAMP = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{1,9}(?:Z|[+-]\d{2}:\d{2}) /g;

const PINO_LEVELS: Record<number, LogLevel> = { 10: 'debug', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' };
const NAMED_LEVELS: Record<string, LogLevel> = {
  trace: 'debug', debug: 'debug', info: 'info', notice: 'info', warn: 'warn', warning: 'warn', error: 'error', fatal: 'error', critical: 'error',
};

/** The level a line declares as JSON (`{"level": "warn"}` or pino's numbers), else by its stream. */
export function levelOf(message: string, source: 'stdout' | 'stderr'): LogLevel {
  if (message.startsWith('{')) {
    try {
      const level = (JSON.parse(message) as { level?: unknown }).level;
      if (typeof level === 'number' && PINO_LEVELS[level]) return PINO_LEVELS[level];
      if (typeof level === 'string' && NAMED_LEVELS[level.toLowerCase()]) return NAMED_LEVELS[level.toLowerCase()]!;
    } catch {
      // not JSON after all: fall through to the stream's level
    }
  }
  return source === 'stderr' ? 'error' : 'info';
}

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
    entries.push({
      id: `${nanos}-${replicaId}-${source === 'stdout' ? 'o' : 'e'}${sequence}`,
      agent_id: agentId,
      replica_id: replicaId,
      timestamp: new Date(millis + Number(fraction.padEnd(3, '0').slice(0, 3))).toISOString(),
      level: levelOf(message, source),
      message,
      source,
    });
  }
  return entries;
}
