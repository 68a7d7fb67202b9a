import { UsageError } from './errors.js';

/**
 * Reads a line from the terminal without echoing it, for a password. Only on a TTY:
 * a script must pass the value as a flag.
 */
export function promptHidden(question: string, flag: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return Promise.reject(new UsageError(`${flag} is required when stdin is not a terminal`));
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (outcome: () => void) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      outcome();
    };
    const onData = (chunk: Buffer) => {
      for (const character of chunk.toString('utf8')) {
        if (character === '\r' || character === '\n') return finish(() => resolve(typed));
        if (character === '\u0003') return finish(() => reject(new UsageError('cancelled')));
        if (character === '\u007f' || character === '\b') typed = typed.slice(0, -1);
        else typed += character;
      }
    };
    stdin.on('data', onData);
  });
}

/** Asks yes or no on a terminal; anything but y/yes is no. */
export async function confirm(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const reader = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await reader.question(`${question} [y/N] `)).trim());
  } finally {
    reader.close();
  }
}
