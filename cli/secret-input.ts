import { readFileSync } from 'node:fs';
import { UsageError } from './errors.js';
import { promptHidden } from './prompt.js';

/**
 * A secret value kept off the command line: typed without echo on a terminal, else all of
 * stdin with one trailing newline dropped (`echo value | …` adds one).
 */
export async function readSecretInput(what: string): Promise<string> {
  if (process.stdin.isTTY) return promptHidden(`${what}: `, what);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** A file's contents as a value, one trailing newline dropped as for stdin. */
export function readSecretFile(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}
