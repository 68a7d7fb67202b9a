/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Terminal {
  /** stdout is a terminal: tables get bars and progress redraws one line. */
  readonly isTty: boolean;
  readonly stdinIsTty: boolean;
  out(text: string): void;
  err(text: string): void;
}

export const processTerminal: Terminal = {
  isTty: Boolean(process.stdout.isTTY),
  stdinIsTty: Boolean(process.stdin.isTTY),
  out: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => void process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
};

/** The API's JSON as it came, for scripts. */
export const printJson = (terminal: Terminal, value: unknown) => terminal.out(JSON.stringify(value, null, 2));

/** Columns padded to their widest cell; the header in capitals. */
export function table(headers: string[], rows: (string | number | boolean | null | undefined)[][]): string {
  const cells = [headers.map((header) => header.toUpperCase()), ...rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]!.length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')).join('\n');
}

/** `key  value` lines for one object. */
export function details(pairs: [string, string | number | boolean | null | undefined][]): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value === null || value === undefined || value === '' ? '-' : value}`).join('\n');
}

/** A bar of `width` cells filled to used/limit, for usage on a terminal. */
export function bar(used: number, limit: number, width = 20): string {
  const share = limit > 0 ? Math.min(1, used / limit) : 1;
  const filled = Math.round(share * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}
