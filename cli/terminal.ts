/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Terminal {
  /** stdout is a terminal: tables get bars and progress redraws one line. */
  readonly isTty: boolean;
  readonly stdinIsTty: boolean;
  /** Colours for this run; each one returns the text unchanged when colour is off. */
  readonly paint: Paint;
  out(text: string): void;
  err(text: string): void;
}

export interface Paint {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  /** A status word in the colour of what it means (running green, failed red, …); other text as is. */
  status(text: string): string;
}

const sgr = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;

const GOOD = new Set(['running', 'succeeded', 'active', 'verified', 'issued', 'ok']);
const BAD = new Set(['failed', 'crashed', 'error', 'revoked', 'expired']);
const BUSY = new Set(['deploying', 'in_progress', 'pending', 'stopping', 'scaling', 'starting', 'waking']);

/** ANSI colours (SGR) when `enabled`, plain text otherwise: settings.ts decides (--no-color, NO_COLOR, a TTY). */
export function paintFor(enabled: boolean): Paint {
  const plain = (text: string) => text;
  const bold = enabled ? sgr(1, 22) : plain;
  const dim = enabled ? sgr(2, 22) : plain;
  const red = enabled ? sgr(31, 39) : plain;
  const green = enabled ? sgr(32, 39) : plain;
  const yellow = enabled ? sgr(33, 39) : plain;
  const status = (text: string) => {
    const word = text.trim();
    return GOOD.has(word) ? green(text) : BAD.has(word) ? red(text) : BUSY.has(word) ? yellow(text) : text;
  };
  return { enabled, bold, dim, red, green, yellow, status };
}

/** stdout and stderr of this process, coloured or not as the settings say. */
export function processTerminal(colour: boolean): Terminal {
  return {
    isTty: Boolean(process.stdout.isTTY),
    stdinIsTty: Boolean(process.stdin.isTTY),
    paint: paintFor(colour),
    out: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => void process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  };
}

/** Whether stdout is a terminal, before any settings are read (colour depends on it). */
export const stdoutIsTty = () => Boolean(process.stdout.isTTY);

/** The API's JSON as it came, for scripts. */
export const printJson = (terminal: Terminal, value: unknown) => terminal.out(JSON.stringify(value, null, 2));

/** Columns padded to their widest cell; the header in capitals (bold with colour), status words coloured. */
export function table(headers: string[], rows: (string | number | boolean | null | undefined)[][], paint: Paint = paintFor(false)): string {
  const cells = [headers.map((header) => header.toUpperCase()), ...rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]!.length)));
  // Padded first and painted after, so the escapes take no width.
  const line = (row: string[], style: (text: string) => string) =>
    row.map((cell, column) => style(column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return cells.map((row, index) => line(row, index === 0 ? paint.bold : paint.status)).join('\n');
}

/** `key  value` lines for one object; with colour, keys dim and status words coloured. */
export function details(pairs: [string, string | number | boolean | null | undefined][], paint: Paint = paintFor(false)): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${paint.dim(key.padEnd(width))}  ${paint.status(value === null || value === undefined || value === '' ? '-' : String(value))}`).join('\n');
}

/** A bar of `width` cells filled to used/limit, for usage on a terminal. */
export function bar(used: number, limit: number, width = 20): string {
  const share = limit > 0 ? Math.min(1, used / limit) : 1;
  const filled = Math.round(share * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

/** 812 → `812 B`, 18432 → `18.0 KiB`, 1048576 → `1.0 MiB`: binary units, as the limits are set. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let exponent = 1;
  while (exponent < units.length && bytes >= 1024 ** (exponent + 1)) exponent++;
  return `${(bytes / 1024 ** exponent).toFixed(1)} ${units[exponent - 1]}`;
}
