import { useState } from 'preact/hooks';
import { LineChart } from '../chart.js';
import type { MetricsSample } from '../types.js';
import { useStream } from '../use-stream.js';

/** The last 15 minutes the page has seen are kept; older samples drop off the charts. */
const KEPT_SECONDS = 15 * 60;
const INTERVAL_SECONDS = 2;

interface Series {
  times: number[];
  cpu: number[];
  memory: number[];
  replicas: number[];
  requests: number[];
  p95: number[];
}

const EMPTY: Series = { times: [], cpu: [], memory: [], replicas: [], requests: [], p95: [] };

/** Live CPU, memory and replica charts from the metrics stream, and the edge's request figures (each over the last 60 s). */
export function MetricsTab({ agentId }: { agentId: string }) {
  const [series, setSeries] = useState<Series>(EMPTY);
  const error = useStream(`/agents/${agentId}/metrics/stream?interval=${INTERVAL_SECONDS}`, (event) => {
    if (event.event !== 'metrics') return;
    const sample = event.data as MetricsSample;
    const time = Date.parse(sample.timestamp) / 1000;
    setSeries((before) => {
      const keep = before.times.findIndex((at) => at > time - KEPT_SECONDS);
      const from = keep < 0 ? before.times.length : keep;
      return {
        times: [...before.times.slice(from), time],
        cpu: [...before.cpu.slice(from), sample.cpu_percent],
        memory: [...before.memory.slice(from), sample.memory_mb],
        replicas: [...before.replicas.slice(from), sample.replicas],
        requests: [...before.requests.slice(from), sample.request_count],
        p95: [...before.p95.slice(from), sample.p95_latency_ms],
      };
    });
  });

  return (
    <div class="charts">
      {error && <p role="alert" class="error">{error}</p>}
      <LineChart title="CPU" unit="%" times={series.times} values={series.cpu} />
      <LineChart title="Memory" unit="MiB" times={series.times} values={series.memory} />
      <LineChart title="Replicas" unit="replicas" times={series.times} values={series.replicas} />
      <LineChart title="Requests, last minute" unit="requests" times={series.times} values={series.requests} />
      <LineChart title="Latency p95, last minute" unit="ms" times={series.times} values={series.p95} />
    </div>
  );
}
