import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starts `node [nodeArgs] --import tsx <entry>` and resolves once a line of its stdout
 * contains `ready`, with everything it printed so far (a port it reports, say).
 */
export async function startNodeProcess(entry: string, env: Record<string, string>, ready: string, nodeArgs: readonly string[] = []): Promise<{ child: ChildProcess; output: string }> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', entry], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const output = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(ready)) resolve(seen);
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code} before it was ready`)));
  });
  child.stdout!.resume();
  return { child, output };
}

/** SIGTERM, then waits for the exit (a --cpu-prof profile is written by then). */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
