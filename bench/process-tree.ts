// CPU time of a process tree, from /proc (Linux): how busy each process below `wrangler dev`
// was during a run, which tells rcpt's cost from the local runtime's limit.
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** User + system CPU seconds of one process, or null once it is gone. */
function cpuSeconds(pid: number): number | null {
  try {
    // proc(5): the command name (field 2) may hold spaces; utime and stime are fields 14 and 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** CPU seconds so far of `pid` and every process below it, by pid. */
export function treeCpuSeconds(pid: number): Map<number, number> {
  const times = new Map<number, number>();
  const pending = [pid];
  while (pending.length > 0) {
    const next = pending.pop() as number;
    const seconds = cpuSeconds(next);
    if (seconds !== null) times.set(next, seconds);
    pending.push(...childrenOf(next));
  }
  return times;
}

/** The largest share of one core any process of the tree used between two readings. */
export function busiestShare(
  before: Map<number, number>,
  after: Map<number, number>,
  wallSeconds: number,
): number {
  let busiest = 0;
  for (const [pid, seconds] of after) busiest = Math.max(busiest, seconds - (before.get(pid) ?? 0));
  return busiest / wallSeconds;
}
