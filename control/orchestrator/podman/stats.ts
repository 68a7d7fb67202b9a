const EXPONENTS: Record<string, number> = { B: 0, k: 1, K: 1, M: 2, G: 3, T: 4 };

/** Parses podman's human sizes ("540.7kB", "67.11MB", "1.2GiB") to bytes. */
export function parseSize(text: string): number {
  const match = /^([\d.]+)\s*([kKMGT]?i?B)?$/.exec(text.trim());
  if (!match) return 0;
  const value = Number(match[1]);
  const unit = match[2] ?? 'B';
  const exponent = EXPONENTS[unit[0]!] ?? 0;
  return value * (unit.includes('i') ? 1024 : 1000) ** exponent;
}

export const parsePercent = (text: string) => Number.parseFloat(text.replace('%', '')) || 0;

export interface PodmanStatsRow {
  name: string;
  cpu_percent: string;
  mem_usage: string;
}
