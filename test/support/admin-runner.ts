import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

/** `npm run admin` as an operator runs it: a process of its own, configured by its environment only. */
const ADMIN = resolve(import.meta.dirname, '../../control/admin.ts');

export interface AdminResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of an admin process: the test's (PATH, HOME), without any master-key setting of it, plus `settings`. */
function adminEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['MASTER_KEYS', 'MASTER_KEYS_FILE', 'MASTER_KEY', 'MASTER_KEY_FILE', 'REDIS_URL']) delete env[name];
  return { ...env, ...settings };
}

/** Runs `npm run admin -- <args>` to its end; never throws on a non-zero exit (the test decides). */
export function runAdmin(settings: Record<string, string>, args: string[]): Promise<AdminResult> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', ADMIN, ...args], { env: adminEnv(settings), timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      done({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Starts `npm run admin -- <args>` and hands back the process, for a test that kills it midway. */
export function startAdmin(settings: Record<string, string>, args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ADMIN, ...args], { env: adminEnv(settings), stdio: ['ignore', 'pipe', 'pipe'] });
}
