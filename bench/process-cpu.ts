import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds (user + system) a process and its descendants have used so far, from
 * /proc/<pid>/stat (proc(5): utime and stime, fields 14 and 15, in clock ticks). Read from
 * outside, so measuring costs the server nothing, and a cluster's workers count with
 * their primary.
 */
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

interface Stat {
  ppid: number;
  ticks: number;
}

function statOf(pid: number): Stat | null {
  try {
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null; // exited meanwhile
  }
}

export function treeCpuSeconds(rootPid: number): number {
  const stats = new Map<number, Stat>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statOf(Number(name));
    if (stat) stats.set(Number(name), stat);
  }
  let ticks = 0;
  const pending = [rootPid];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    ticks += stats.get(pid)?.ticks ?? 0;
    for (const [child, stat] of stats) if (stat.ppid === pid) pending.push(child);
  }
  return ticks / TICKS_PER_SECOND;
}
