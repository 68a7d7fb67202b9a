import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url));

export interface ChildRuntime {
  process: ChildProcess;
  port: number;
  stdout(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs src/main.ts as its own process, the way the image runs dist/main.js, with exactly `env` added. */
export function spawnMain(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: PACKAGE_DIR,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** Starts main.ts on a free port and waits for its "listening" log line. */
export async function startChildRuntime(env: Record<string, string>): Promise<ChildRuntime> {
  const { child, exited, stdout } = spawnMain({ PORT: '0', ...env });
  const port = await new Promise<number>((resolve, reject) => {
    const check = () => {
      const listening = stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { message: string; port?: number })
        .find((line) => line.message === 'listening');
      if (listening?.port) resolve(listening.port);
    };
    child.stdout!.on('data', check);
    void exited.then(({ code }) => reject(new Error(`runtime exited with ${code} before listening: ${stdout()}`)));
  });
  return { process: child, port, stdout, exited };
}
