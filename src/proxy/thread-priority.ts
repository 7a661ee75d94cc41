/**
 * Lower the scheduling priority of the calling thread alone, where the system allows it: on
 * Linux a thread has its own nice value, set through its thread id (`/proc/thread-self`). Used by
 * the lane worker, whose bodies are the largest: on a machine with few cores its work then waits
 * for the proxy's thread and governance instead of taking their core while small requests queue.
 * Best effort: elsewhere, or when refused, nothing changes.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The nice value the lane worker runs at (0 is the default, 19 the lowest priority). */
export const LANE_NICENESS = 10;

/** Returns the thread's priority after the call, or undefined when it could not be read or set. */
export function lowerThreadPriority(niceness: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(threadId)) return undefined;
    setPriority(threadId, niceness);
    return getPriority(threadId);
  } catch {
    return undefined;
  }
}
