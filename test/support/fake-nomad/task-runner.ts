import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** How the fake Nomad client runs a docker task: with podman, the way the docker driver would. */
export interface TaskLaunch {
  name: string;
  label: string;
  image: string;
  env: Record<string, string>;
  /** Host directories bound into the container (the task's secrets directory, as the docker driver binds it). */
  mounts?: { source: string; target: string }[];
  hostPort: number;
  containerPort: number;
  config: Record<string, unknown>;
  memoryMb: number;
}

const podman = async (args: string[]) => (await run('podman', ['--runtime', 'runc', ...args], { maxBuffer: 16 << 20 })).stdout.trim();

export async function imagePresent(image: string): Promise<boolean> {
  try {
    await podman(['image', 'exists', image]);
    return true;
  } catch {
    return false; // never pulled: the workplace reaches no registry, and Nomad's pull would fail the same way
  }
}

export async function createTask(task: TaskLaunch): Promise<void> {
  const list = (key: string) => (task.config[key] as string[] | undefined) ?? [];
  const args = [
    'create', '--name', task.name, '--label', `fake-nomad=${task.label}`,
    '-p', `127.0.0.1:${task.hostPort}:${task.containerPort}`,
    ...Object.entries(task.env).flatMap(([key, value]) => ['-e', `${key}=${value}`]),
    ...(task.mounts ?? []).flatMap(({ source, target }) => ['--mount', `type=bind,source=${source},destination=${target}`]),
    ...list('cap_drop').flatMap((cap) => ['--cap-drop', cap]),
    ...list('cap_add').flatMap((cap) => ['--cap-add', cap]),
    ...list('security_opt').flatMap((opt) => ['--security-opt', opt]),
    ...(task.config.pids_limit ? ['--pids-limit', String(task.config.pids_limit)] : []),
    '--memory', `${task.memoryMb}m`,
    // This host's hard limits are below podman's defaults (../shared/NOTES.md); Docker on a Nomad client inherits its own.
    '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096',
    task.image,
  ];
  await podman(args);
}

export const startTask = (name: string) => podman(['start', name]);

/** Running, or the exit code of a stopped container. */
export async function taskState(name: string): Promise<{ running: boolean; exitCode: number }> {
  const out = await podman(['inspect', '--format', '{{.State.Running}} {{.State.ExitCode}}', name]);
  const [running, exitCode] = out.split(' ');
  return { running: running === 'true', exitCode: Number(exitCode) };
}

export async function removeTask(name: string): Promise<void> {
  await podman(['rm', '--force', '--time', '1', name]).catch(() => undefined);
}

export async function removeLabelled(label: string): Promise<void> {
  const names = (await podman(['ps', '--all', '--filter', `label=fake-nomad=${label}`, '--format', '{{.Names}}'])).split('\n').filter(Boolean);
  if (names.length > 0) await podman(['rm', '--force', '--time', '1', ...names]).catch(() => undefined);
}
