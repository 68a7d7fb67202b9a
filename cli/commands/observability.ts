import type { Static } from '@sinclair/typebox';
import type { LogEntry, MetricsSample } from '../../control/schemas/agents.js';
import { command } from '../command.js';
import { resolveAgent } from '../resolve-agent.js';
import { printJson, table, type Terminal } from '../terminal.js';

type Log = Static<typeof LogEntry>;

/** The API's log levels (control/domain/log-entry.ts LOG_LEVELS), lowest first; the type keeps the two lists together. */
const LEVELS = ['debug', 'info', 'warn', 'error'] as const satisfies readonly Log['level'][];

/** With `invocations`, the invocation id before the message, or a dash as wide for a line of none. */
const logLine = (entry: Log, invocations: boolean) => {
  const invocation = invocations ? `${entry.invocation_id ?? '-'.padEnd(32)} ` : '';
  return `${entry.timestamp} ${entry.replica_id} ${entry.level.toUpperCase().padEnd(5)} ${invocation}${entry.message}`;
};
const sampleRow = (sample: MetricsSample) => [
  sample.timestamp, sample.replicas, sample.cpu_percent.toFixed(1), sample.memory_mb.toFixed(0), sample.memory_percent.toFixed(1),
  sample.request_count, sample.error_count, sample.avg_latency_ms.toFixed(1), sample.p95_latency_ms.toFixed(1),
];
/** The request columns are the edge's figures over the last 60 s (docs/edge.md, "Request figures"). */
const METRICS_HEADERS = ['time', 'replicas', 'cpu %', 'memory mb', 'memory %', 'requests 60s', '5xx 60s', 'avg ms', 'p95 ms'];

/** A followed stream prints one JSON document per line with --json, so a script reads it line by line. */
const printEvent = (terminal: Terminal, json: boolean, data: unknown, line: string) => (json ? terminal.out(JSON.stringify(data)) : terminal.out(line));

export const logs = command({
  command: 'logs <agent>',
  examples: [
    ["$0 agents logs support-bot --level warn", "recent warnings and errors"],
    ["$0 agents logs support-bot -f", "keep printing new lines"],
    ["$0 agents logs support-bot --invocations", "each line with the invocation it was written in"],
    ["$0 agents logs support-bot --invocation 4bf92f3577b34da6a3ce929d0e0e4736", "the lines of one invocation (see `invocations get`)"],
  ],
  describe: 'Recent output of every replica, newest last; --follow keeps printing',
  builder: (yargs) =>
    yargs
      .positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' })
      .option('follow', { alias: 'f', type: 'boolean', describe: 'keep printing new lines until interrupted' })
      .option('replica', { type: 'string', describe: 'one replica only' })
      .option('level', { type: 'string', choices: LEVELS, describe: 'the lowest level shown' })
      .option('limit', { type: 'number', describe: 'at most this many entries (1–1000)' })
      .option('invocation', { type: 'string', describe: 'only the lines written in this invocation (its id, 32 hex)' })
      .option('invocations', { type: 'boolean', describe: 'show the invocation each line was written in (- for none)' }),
  run: async (args, { api, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    const query = { limit: args.limit, level: args.level, replica_id: args.replica, invocation_id: args.invocation };
    const line = (entry: Log) => logLine(entry, args.invocations ?? false);
    if (!args.follow) {
      const list = await api.request<{ logs: Log[] }>('GET', `/agents/${agent.id}/logs`, { query });
      if (json) return printJson(terminal, list);
      for (const entry of list.logs) terminal.out(line(entry));
      return;
    }
    for await (const event of api.events(`/agents/${agent.id}/logs/stream`, { query })) {
      if (event.event !== 'log') continue;
      const entry = JSON.parse(event.data) as Log;
      printEvent(terminal, json, entry, line(entry));
    }
  },
});

export const metrics = command({
  command: 'metrics <agent>',
  examples: [["$0 agents metrics support-bot", ""], ["$0 agents metrics support-bot --watch --interval 2", "a sample every 2 seconds"]],
  describe: 'Live CPU and memory averaged over replicas, and the last minute\'s requests at the edge; --watch samples every --interval seconds',
  builder: (yargs) =>
    yargs
      .positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' })
      .option('watch', { alias: 'w', type: 'boolean', describe: 'keep sampling until interrupted' })
      .option('interval', { type: 'number', describe: 'seconds between samples with --watch (1–60, default 5)' }),
  run: async (args, { api, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    if (!args.watch) {
      const sample = await api.request<MetricsSample>('GET', `/agents/${agent.id}/metrics`);
      if (json) return printJson(terminal, sample);
      return terminal.out(table(METRICS_HEADERS, [sampleRow(sample)]));
    }
    if (!json) terminal.out(table(METRICS_HEADERS, []));
    for await (const event of api.events(`/agents/${agent.id}/metrics/stream`, { query: { interval: args.interval } })) {
      if (event.event !== 'metrics') continue;
      const sample = JSON.parse(event.data) as MetricsSample;
      printEvent(terminal, json, sample, sampleRow(sample).join('  '));
    }
  },
});
