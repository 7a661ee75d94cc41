/** CPU time by thread of a process, for the proxy benches (Linux `/proc`; undefined elsewhere). */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of each thread of a process so far, in ms, by thread id (the main thread's is the pid). */
export function threadCpuTimes(pid: number | undefined): Map<string, number> | undefined {
  if (pid === undefined) return undefined;
  try {
    const times = new Map<string, number>();
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime, in clock ticks of 10 ms.
      times.set(task, (Number(fields[11]) + Number(fields[12])) * 10);
    }
    return times;
  } catch {
    return undefined;
  }
}

/**
 * CPU time of each thread of the proxy process so far: its main thread, then the rest, largest
 * first — the governance worker, V8's garbage-collection helpers, the SQLite checkpointer —
 * which share the machine's cores with it.
 */
export function threadCpuMs(pid: number | undefined): { main: number; others: number[] } | undefined {
  const times = threadCpuTimes(pid);
  if (times === undefined) return undefined;
  const others = [...times]
    .filter(([task, ms]) => task !== String(pid) && ms >= 50)
    .map(([, ms]) => ms)
    .sort((left, right) => right - left);
  return { main: times.get(String(pid)) ?? 0, others };
}

/** CPU ms each thread used between two readings, largest first (threads that ended are left out). */
export function cpuSince(
  before: ReadonlyMap<string, number> | undefined,
  after: ReadonlyMap<string, number> | undefined,
): number[] {
  if (before === undefined || after === undefined) return [];
  return [...after]
    .map(([task, ms]) => ms - (before.get(task) ?? 0))
    .filter((ms) => ms > 0)
    .sort((left, right) => right - left);
}
