import { readdirSync, readFileSync } from 'node:fs';

/**
 * A server stalled, not gone: every process of it stopped with SIGSTOP, so its sockets
 * stay open and the kernel still accepts connections and data for it, but nothing
 * answers (issue 31). Only for servers a test started itself.
 */

/** `root` and every process under it (Postgres serves each connection from a child of the postmaster). */
function processTree(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // The fourth field, after the command name in parentheses (which may hold spaces): proc(5).
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parents.set(parent, [...(parents.get(parent) ?? []), Number(entry)]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i += 1) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

/**
 * Runs `work` while the process tree of `pid` is stopped, and always continues it after.
 * The root is stopped first, so it forks no child that the list would miss.
 */
export async function whileFrozen<T>(pid: number, work: () => Promise<T>): Promise<T> {
  let stopped = [pid];
  try {
    process.kill(pid, 'SIGSTOP');
    stopped = processTree(pid);
    for (const child of stopped.slice(1)) process.kill(child, 'SIGSTOP');
    return await work();
  } finally {
    for (const each of [...stopped.slice(1), pid]) {
      try {
        process.kill(each, 'SIGCONT');
      } catch {
        // exited while stopped (a killed backend): nothing to continue
      }
    }
  }
}
