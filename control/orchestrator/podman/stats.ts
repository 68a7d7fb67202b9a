/**
 * One container's line of `podman stats --no-stream --format '{{json .ContainerStats}}'`:
 * libpod's ContainerStats (podman-stats(1), `.ContainerStats`), whose figures are numbers,
 * where `--format json` gives the text of podman's table ("67.11MB", "3.10%").
 */
export interface ContainerStats {
  Name: string;
  /** Percent of one CPU, full precision: what the table shows as CPU %, rounded there to hundredths. */
  CPU: number;
  /** Bytes in use. */
  MemUsage: number;
}

/** The format that gives one ContainerStats object a line, one line per container. */
export const STATS_FORMAT = '{{json .ContainerStats}}';

export const parseStats = (stdout: string): ContainerStats[] =>
  stdout.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as ContainerStats);
