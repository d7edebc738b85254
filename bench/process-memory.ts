// Resident memory of a process and all its descendants, from /proc (Linux).
import { readdirSync, readFileSync } from 'node:fs';

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

function rssKb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** RSS in MB of `pid` and every process below it. */
export function treeRssMb(pid: number): number {
  let total = 0;
  const pending = [pid];
  while (pending.length > 0) {
    const next = pending.pop() as number;
    total += rssKb(next);
    pending.push(...childrenOf(next));
  }
  return total / 1024;
}

/** Samples the peak tree RSS of each pid until stopped. */
export function samplePeaks(pids: Record<string, number>, everyMs = 200): { stop(): Record<string, number> } {
  const peaks: Record<string, number> = Object.fromEntries(Object.keys(pids).map((name) => [name, 0]));
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) peaks[name] = Math.max(peaks[name] ?? 0, treeRssMb(pid));
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peaks;
    },
  };
}

export const hasProc = (() => {
  try {
    return readdirSync('/proc').length > 0;
  } catch {
    return false;
  }
})();
