const UNITS = ['B', 'KiB', 'MiB', 'GiB'];

/** 812 → `812 B`, 18432 → `18.0 KiB`: binary units, as the platform's size limits are set. */
export function formatBytes(bytes: number): string {
  let unit = 0;
  while (unit < UNITS.length - 1 && bytes >= 1024 ** (unit + 1)) unit++;
  return unit === 0 ? `${bytes} B` : `${(bytes / 1024 ** unit).toFixed(1)} ${UNITS[unit]}`;
}
