import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

/** One uPlot line chart of `values` over `times` (seconds), redrawn as points arrive. */
export function LineChart({ title, unit, times, values }: { title: string; unit: string; times: number[]; values: number[] }) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const width = Math.min(holder.current!.clientWidth || 600, 900);
    plot.current = new uPlot(
      {
        title,
        width,
        height: 180,
        series: [{}, { label: `${title} (${unit})`, stroke: '#2a6fdb', width: 2, points: { show: true } }],
        axes: [{}, { label: unit }],
      },
      [times, values],
      holder.current!,
    );
    return () => plot.current?.destroy();
  }, []);

  useEffect(() => plot.current?.setData([times, values]), [times, values]);

  // The points' count and the latest value in words: the chart is a canvas, so its content is said here too.
  const latest = values.at(-1);
  return (
    <figure class="chart" data-points={values.length} aria-label={`${title} chart`}>
      <div ref={holder} />
      <figcaption>{title}: {latest === undefined ? 'no samples yet' : `${latest.toFixed(2)} ${unit}`} ({values.length} samples)</figcaption>
    </figure>
  );
}
