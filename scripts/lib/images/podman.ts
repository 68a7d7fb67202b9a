import { execFileSync } from 'node:child_process';

/** podman with its output returned; stderr passes through, so its own message explains a failure. */
export function podman(args: string[]): string {
  try {
    return execFileSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 * 1024 * 1024 }).trim();
  } catch (error) {
    throw new Error(`podman ${args[0]} failed (${(error as Error).message.split('\n')[0]}): see its message above`);
  }
}

export function imageExists(reference: string): boolean {
  try {
    execFileSync('podman', ['image', 'exists', reference], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
