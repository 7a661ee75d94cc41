/**
 * One failure policy for every store (SQLite, Redis, PostgreSQL): each call has a deadline, and
 * a circuit breaker per store stops waiting on a store that keeps failing.
 *
 * After `failures` failures in a row (a deadline that passed counts as one) the breaker opens:
 * calls fail at once with a `StoreError` for `openMs`; then one call goes through as a probe
 * (half-open), and its answer closes the breaker or opens it again. The store may be opened
 * lazily: one that is down at start-up is opened by the first call the breaker lets through, so
 * a proxy starts while its store is down, reports it, and recovers by itself when it returns.
 *
 * A call past its deadline is left to finish on its own (a driver cannot take a sent command
 * back); its late answer is dropped. Every operation of `SidecarStore` is forwarded.
 */
import { StoreError, toSelfGcError } from '../core/errors.js';
import { SIDECAR_STORE_OPERATIONS, type SidecarStore, type SidecarStoreOperation } from '../core/store.js';
import {
  DEFAULT_BREAKER_FAILURES,
  DEFAULT_BREAKER_OPEN_MS,
  DEFAULT_MAINTENANCE_TIMEOUT_MS,
  DEFAULT_STORE_TIMEOUT_MS,
} from './store-policy.js';
import { withinDeadline } from './within-deadline.js';

/** How long `close` waits for an open still under way (the store is closed when it lands). */
const CLOSE_WAIT_MS = 2_000;
/** The session `probe` reads: any id does; this one names its purpose in a store's logs. */
const PROBE_SESSION = 'selfgc-health-probe';

const MAINTENANCE: ReadonlySet<SidecarStoreOperation> = new Set(['listSessions', 'expireBefore']);

export type BreakerState = 'closed' | 'open' | 'half-open';

/** What a guarded store knows of its store, without asking it. */
export interface StoreHealth {
  /** The backend: `sqlite`, `redis`, `postgres`, `memory`. */
  kind: string;
  /** `down` while the breaker is not closed or the latest call failed. */
  status: 'ok' | 'down';
  breaker: BreakerState;
  /** Failures in a row. */
  failures: number;
  /** The latest failure, for the operator's log only: it may name hosts and ports. */
  lastError?: string;
}

export interface StoreGuardOptions {
  /** Deadline of each call in milliseconds, opening the store included (default 250). */
  timeoutMs?: number;
  /** Deadline of `listSessions` and `expireBefore` (default 10 s). */
  maintenanceTimeoutMs?: number;
  /** Failures in a row that open the breaker (default 3). */
  failures?: number;
  /** Milliseconds an open breaker refuses calls before a probe (default 2000). */
  openMs?: number;
  /** Clock in milliseconds. */
  now?: () => number;
  /** Told when the breaker changes state (for the log). */
  onChange?: (health: StoreHealth) => void;
}

/** A store opened on first use: its kind is known before it is. */
export interface StoreOpener {
  kind: string;
  open(): Promise<SidecarStore>;
}

export interface GuardedStore extends SidecarStore {
  /** The breaker's view of the store, at once. */
  health(): StoreHealth;
  /**
   * Ask the store (one session read, within the deadline) unless the open breaker says not yet,
   * and report. A store not opened yet is opened now; an error that no retry can fix (a bad
   * URL, a missing driver) is thrown instead.
   */
  probe(): Promise<StoreHealth>;
}

/** True for a value returned by `guardStore`. */
export function isGuardedStore(store: SidecarStore): store is GuardedStore {
  return typeof (store as Partial<GuardedStore>).probe === 'function';
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) && value > 0)) {
    throw new StoreError(`guardStore: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/** Failures of the store itself; anything else (bad input) is an answer and proves it alive. */
function isStoreFailure(error: unknown): boolean {
  const { code } = toSelfGcError(error);
  return code === 'store-failure' || code === 'internal';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function guardStore(
  source: SidecarStore | StoreOpener,
  options: StoreGuardOptions = {},
): GuardedStore {
  const timeoutMs = positive(options.timeoutMs, DEFAULT_STORE_TIMEOUT_MS, 'timeoutMs');
  const maintenanceMs = Math.max(
    timeoutMs,
    positive(options.maintenanceTimeoutMs, DEFAULT_MAINTENANCE_TIMEOUT_MS, 'maintenanceTimeoutMs'),
  );
  const threshold = positive(options.failures, DEFAULT_BREAKER_FAILURES, 'failures');
  const openMs = positive(options.openMs, DEFAULT_BREAKER_OPEN_MS, 'openMs');
  const now = options.now ?? Date.now;
  const opener =
    typeof (source as Partial<SidecarStore>).putPayloads === 'function' ? undefined : (source as StoreOpener);
  const kind = source.kind;

  let store: SidecarStore | undefined = opener === undefined ? (source as SidecarStore) : undefined;
  let opening: Promise<SidecarStore> | undefined;
  let closed = false;
  let breaker: BreakerState = 'closed';
  let failures = 0;
  let openedAt = 0;
  let lastFailed = false;
  let lastError: string | undefined;

  const health = (): StoreHealth => ({
    kind,
    status: breaker === 'closed' && !lastFailed ? 'ok' : 'down',
    breaker,
    failures,
    ...(lastError === undefined ? {} : { lastError }),
  });

  const moveTo = (next: BreakerState) => {
    if (breaker === next) return;
    breaker = next;
    options.onChange?.(health());
  };

  /** Whether a call may reach the store now (once the open time has passed, as the half-open probe). */
  const admit = (): boolean => {
    if (breaker === 'closed') return true;
    if (breaker === 'open' && now() - openedAt >= openMs) {
      moveTo('half-open');
      return true;
    }
    return false;
  };

  const answered = () => {
    failures = 0;
    lastFailed = false;
    moveTo('closed');
  };

  const failed = (error: unknown) => {
    failures += 1;
    lastFailed = true;
    lastError = messageOf(error);
    // Late failures of calls made before the breaker opened do not keep it open longer.
    if (breaker === 'half-open' || (breaker === 'closed' && failures >= threshold)) {
      openedAt = now();
      moveTo('open');
    }
  };

  const openStore = (): Promise<SidecarStore> => {
    if (store !== undefined) return Promise.resolve(store);
    if (opener === undefined) throw new StoreError(`${kind} store: nothing to open`);
    opening ??= opener.open().then(
      (opened) => {
        opening = undefined;
        if (closed) {
          opened.close().catch(() => undefined);
          throw new StoreError(`${kind} store: opened after close`);
        }
        store = opened;
        return opened;
      },
      (error: unknown) => {
        opening = undefined;
        throw error;
      },
    );
    return opening;
  };

  async function call<T>(operation: SidecarStoreOperation, run: (target: SidecarStore) => Promise<T>) {
    if (closed) throw new StoreError(`${kind} store: ${operation} after close`);
    if (!admit()) {
      throw new StoreError(
        `${kind} store unavailable: circuit open after ${failures} failures in a row (latest: ${lastError ?? 'none'})`,
      );
    }
    const deadline = MAINTENANCE.has(operation) ? maintenanceMs : timeoutMs;
    let opened = store !== undefined;
    const work = (async () => {
      const target = store ?? (await openStore());
      opened = true;
      return run(target);
    })();
    try {
      const result = await withinDeadline(
        work,
        deadline,
        () => new StoreError(`${kind} ${operation}: no answer within ${deadline} ms`),
      );
      answered();
      return result;
    } catch (error) {
      // A store that cannot be opened has failed, whatever the reason; one that answered has not.
      if (!opened || isStoreFailure(error)) failed(error);
      else answered();
      throw error;
    }
  }

  const guarded = {
    kind,
    health,
    async probe() {
      try {
        await call('readSession', (target) => target.readSession(PROBE_SESSION));
      } catch (error) {
        // Only an open that no retry can fix (a bad URL, a missing driver) is the caller's to hear.
        if (!isStoreFailure(error)) throw error;
      }
      return health();
    },
    async close() {
      if (closed) return;
      closed = true;
      let target = store;
      if (target === undefined && opening !== undefined) {
        target = await withinDeadline(
          opening,
          CLOSE_WAIT_MS,
          () => new StoreError('open still under way'),
        ).catch(() => undefined);
      }
      if (target === undefined) return;
      await withinDeadline(
        target.close(),
        maintenanceMs,
        () => new StoreError(`${kind} close: no answer within ${maintenanceMs} ms`),
      );
    },
  } as GuardedStore;
  const forwarded = guarded as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const operation of SIDECAR_STORE_OPERATIONS) {
    if (operation === 'close') continue;
    forwarded[operation] = (...args: unknown[]) =>
      call(operation, (target) =>
        (target[operation] as (...inner: unknown[]) => Promise<unknown>).apply(target, args),
      );
  }
  return guarded;
}
