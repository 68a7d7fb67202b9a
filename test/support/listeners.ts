import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * What a process tree listens on, as the kernel sees it (proc(5)): no asking the program.
 * Linux only, as the tests' hosts are.
 */

/** `pid` and its descendants (a node:cluster primary and its workers), from each process's parent in /proc/<pid>/stat. */
export function processTree(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i += 1) {
    for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  }
  return tree;
}

/** The inodes of the sockets `pids` hold open (/proc/<pid>/fd links read `socket:[inode]`). */
function socketInodes(pids: number[]): Set<string> {
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (match) inodes.add(match[1]!);
      } catch {
        // closed meanwhile
      }
    }
  }
  return inodes;
}

/** TCP ports `pids` listen on, IPv4 and IPv6 (/proc/net/tcp{,6}: state 0A is LISTEN). */
export function tcpListenPorts(pids: number[]): number[] {
  const inodes = socketInodes(pids);
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9]!)) continue;
      ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** Paths of the Unix sockets `pids` listen on (/proc/net/unix: flags 00010000 is __SO_ACCEPTCON, a listening socket). */
export function unixListenPaths(pids: number[]): string[] {
  const inodes = socketInodes(pids);
  const paths = new Set<string>();
  // A cluster primary binds the shorter of a socket's absolute path and its path relative
  // to its working directory (node lib/internal/cluster/primary.js, queryServer: "Find
  // shortest path for unix sockets because of the ~100 byte limit"), and /proc/net/unix
  // shows the path as bound: a relative one is resolved against the process's directory.
  const cwd = readlinkSync(`/proc/${pids[0]}/cwd`);
  for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8 || fields[3] !== '00010000' || !inodes.has(fields[6]!)) continue;
    paths.add(resolve(cwd, fields[7]!));
  }
  return [...paths].sort();
}
