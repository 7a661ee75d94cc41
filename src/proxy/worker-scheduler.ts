/**
 * Work for a set of worker threads, scheduled fairly: one job per worker at a time, waiting jobs
 * in per-tenant queues served in turn, and a time budget per job (its wait included) after which
 * the caller stops waiting and takes another way. A job goes to the worker its affinity names
 * (which holds its session's ledger) when that one is free; when it has waited `stealAfterMs`,
 * any free worker takes it. A worker that died is replaced when it is next needed.
 */
import { createHash } from 'node:crypto';
import { SelfGcError } from '../core/errors.js';
import { createFairQueue } from './fair-queue.js';
import type { WorkerThread } from './worker-thread.js';

/** A job waits this long for the worker holding its session's ledger before any free worker takes it. */
export const STEAL_AFTER_MS = 50;

export interface ScheduledJob<R> {
  /** The tenant whose queue it waits in. */
  tenant: string;
  /** Jobs of one affinity prefer one worker. */
  affinity: string;
  /** Time from now after which the caller stops waiting; undefined for no limit. */
  budgetMs?: number | undefined;
  /** The request's signal: a job whose request went away leaves the queue. */
  signal: AbortSignal;
  run(thread: WorkerThread): Promise<R>;
}

export type JobOutcome<R> = { value: R } | { late: true };

export interface WorkerScheduler {
  schedule<R>(job: ScheduledJob<R>): Promise<JobOutcome<R>>;
  /** The threads started so far (their `ready` for start-up). */
  threads(): WorkerThread[];
  /** Jobs waiting for a worker. */
  waiting(): number;
  close(): Promise<void>;
}

interface Waiting {
  job: ScheduledJob<unknown>;
  preferred: number;
  /** Set when it has waited `stealAfterMs`: any free worker may take it from then on. */
  mayMove: boolean;
  start(slot: number): void;
}

export function createWorkerScheduler(options: {
  threads: number;
  start: () => WorkerThread;
  stealAfterMs?: number;
}): WorkerScheduler {
  const count = Math.max(1, options.threads);
  const stealAfterMs = options.stealAfterMs ?? STEAL_AFTER_MS;
  const threads: Array<WorkerThread | undefined> = new Array(count).fill(undefined);
  const busy = new Array<boolean>(count).fill(false);
  const queue = createFairQueue<Waiting>();
  let closed = false;

  const threadAt = (slot: number): WorkerThread => {
    let thread = threads[slot];
    if (thread === undefined || thread.exited() !== undefined) {
      thread = options.start();
      threads[slot] = thread;
    }
    return thread;
  };
  for (let slot = 0; slot < count; slot += 1) threadAt(slot);

  const slotFor = (waiting: Waiting): number | undefined => {
    if (!busy[waiting.preferred]) return waiting.preferred;
    if (!waiting.mayMove) return undefined;
    const free = busy.indexOf(false);
    return free === -1 ? undefined : free;
  };

  const pump = () => {
    while (!closed && busy.includes(false)) {
      let slot: number | undefined;
      const next = queue.next((waiting) => {
        slot = slotFor(waiting);
        return slot !== undefined;
      });
      if (next === undefined || slot === undefined) return;
      next.start(slot);
    }
  };

  const preferredSlot = (affinity: string) =>
    count === 1 ? 0 : createHash('sha256').update(affinity).digest().readUInt32BE(0) % count;

  return {
    schedule<R>(job: ScheduledJob<R>): Promise<JobOutcome<R>> {
      if (closed) return Promise.reject(new SelfGcError('internal', 'governance workers are closed'));
      return new Promise<JobOutcome<R>>((resolve, reject) => {
        const timers: NodeJS.Timeout[] = [];
        let settled = false;
        const settle = (outcome: () => void) => {
          if (settled) return;
          settled = true;
          for (const timer of timers) clearTimeout(timer);
          job.signal.removeEventListener('abort', onAbort);
          outcome();
        };
        const waiting: Waiting = {
          job: job as ScheduledJob<unknown>,
          mayMove: false,
          preferred: preferredSlot(job.affinity),
          start(slot) {
            busy[slot] = true;
            const thread = threadAt(slot);
            job
              .run(thread)
              .then(
                (value) => settle(() => resolve({ value })),
                (error: unknown) => settle(() => reject(error)),
              )
              .finally(() => {
                // The worker is free again only once it answered, even for a job given up on.
                busy[slot] = false;
                pump();
              });
          },
        };
        const leave = (outcome: () => void) => {
          queue.remove(job.tenant, waiting);
          settle(outcome);
        };
        const onAbort = () => leave(() => reject(job.signal.reason));
        if (job.signal.aborted) return onAbort();
        job.signal.addEventListener('abort', onAbort, { once: true });
        if (job.budgetMs !== undefined) {
          timers.push(setTimeout(() => leave(() => resolve({ late: true })), job.budgetMs));
        }
        // A job left waiting for its own worker looks for any free one once it may. The timer
        // itself says so: a clock read when it fires can be a fraction of a millisecond short of
        // the delay, and a job that missed its one chance would wait for an unrelated job to end.
        timers.push(
          setTimeout(() => {
            waiting.mayMove = true;
            pump();
          }, stealAfterMs),
        );
        queue.push(job.tenant, waiting);
        pump();
      });
    },
    threads: () => threads.filter((thread): thread is WorkerThread => thread !== undefined),
    waiting: () => queue.size,
    async close() {
      closed = true;
      await Promise.all(
        threads.map((thread) => thread?.terminate().catch(() => undefined) ?? Promise.resolve()),
      );
    },
  };
}
