/**
 * Retention in a running proxy: a sweep every so often removes the sessions (sidecar payloads,
 * commits, state) last written longer ago than the retention, a bounded number per sweep, so
 * that secrets in tool outputs do not stay in the store forever.
 */
import { BadInputError, type SelfGcError, toSelfGcError } from '../core/errors.js';
import { DEFAULT_EXPIRE_LIMIT, type SidecarStore } from '../core/store.js';

export interface RetentionSweeperOptions {
  store: SidecarStore;
  /** Sessions idle (not written) for longer than this are removed. */
  retainMs: number;
  /** Time between sweeps. Default: a tenth of the retention, at most a minute. */
  intervalMs?: number;
  /** Sessions one sweep removes at most (default `DEFAULT_EXPIRE_LIMIT`). */
  limit?: number;
  /** Clock in milliseconds since the epoch (default `Date.now`). */
  now?: () => number;
  /** Told of each sweep that removed something, and of each that failed (the next one retries). */
  onSweep?: (outcome: { removed: string[] } | { error: SelfGcError }) => void;
}

export interface RetentionSweeper {
  /** One sweep now; resolves with the sessions it removed. */
  sweep(): Promise<string[]>;
  /** No more sweeps; waits for one under way. */
  stop(): Promise<void>;
}

/** After a sweep that removed a full batch, the next one comes this soon: a backlog drains. */
const BACKLOG_PAUSE_MS = 1000;

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new BadInputError(
      `retention sweeper: ${name} must be a positive integer of milliseconds, got ${value}`,
    );
  }
  return value;
}

export function startRetentionSweeper(options: RetentionSweeperOptions): RetentionSweeper {
  const retainMs = positive(options.retainMs, 'retainMs');
  const intervalMs = positive(options.intervalMs ?? Math.min(60_000, Math.ceil(retainMs / 10)), 'intervalMs');
  const limit = options.limit ?? DEFAULT_EXPIRE_LIMIT;
  const now = options.now ?? Date.now;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<string[]> | undefined;

  const sweep = (): Promise<string[]> => {
    running ??= options.store.expireBefore(now() - retainMs, { limit }).finally(() => {
      running = undefined;
    });
    return running;
  };

  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      sweep().then(
        (removed) => {
          if (removed.length > 0) options.onSweep?.({ removed });
          schedule(removed.length >= limit ? BACKLOG_PAUSE_MS : intervalMs);
        },
        (error: unknown) => {
          options.onSweep?.({ error: toSelfGcError(error) });
          schedule(intervalMs);
        },
      );
    }, delay);
    // A sweep never keeps the process alive on its own.
    timer.unref();
  };
  schedule(intervalMs);

  return {
    sweep,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
