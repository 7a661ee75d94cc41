/**
 * Governance off the proxy's event loop: worker threads that each open the store themselves and
 * run `prepareUpstream` (parse, find the session, govern, serialise) for the requests handed to
 * them. The proxy's thread only reads and writes sockets, so a commit (rehearsal and sidecar
 * writes, several milliseconds) no longer holds every other session's bytes in its queue.
 *
 * Requests of one API key (and session id header) always go to the same worker, so its ledger
 * cache serves them; the store stays the source of truth, as for several proxy instances. Pass
 * the result as the proxy's `governance` and close it after the server.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { type ErrorCode, SelfGcError } from '../core/errors.js';
import type { RecoveryScope } from '../core/governor/governor-types.js';
import type { Arm } from './ab-split.js';
import { clientSessionHint } from './client-session-id.js';
import {
  GOVERNANCE_HEADERS,
  type PreparedRequest,
  type PreparedUpstream,
  type PrepareInput,
} from './prepare-upstream.js';
import type { ProxyLogEntry } from './proxy-log.js';
import { type MetricOperation, type ProxyMetrics, replayMetrics } from './proxy-metrics.js';
import { SESSION_HEADER } from './session-identity.js';
import type { RecoveryGovernor } from './transparent-recovery.js';

export interface GovernanceWorkerOptions {
  /** The store every worker opens (`sqlite:…`, `redis://…`, `postgres://…`). */
  storeUrl: string;
  /** Context window for every model. Default: each model's real window. */
  window?: number;
  /** Output tokens to keep free when a request names none (see `ProxyOptions.reserveOutput`). */
  reserveOutput?: number;
  /** The governor's cache rule (see `GovernorOptions.cache`). */
  cache?: 'blind';
  /**
   * Count tokens with real BPE encodings, each provider's own (`per-provider`: o200k for OpenAI,
   * Anthropic's conservative estimate for Anthropic). Default: the approximate counter.
   */
  tokenizer?: 'per-provider';
  /** Retention the workers' store applies as it writes (Redis TTLs; see `StoreUrlOptions`). */
  retainMs?: number;
}

export interface GovernanceWorkersOptions extends GovernanceWorkerOptions {
  /** Worker threads. Default 1. */
  threads?: number;
}

/** What the proxy's thread hands over for one request: `prepareUpstream`'s input, settings by value. */
export type GovernanceInput = Omit<PrepareInput, 'settings' | 'transcripts'> &
  Pick<PrepareInput['settings'], 'failOpen' | 'recovery'>;

export interface GovernanceWorkers {
  /** Settles once every worker has opened its store (rejects when one could not). */
  ready(): Promise<void>;
  prepare(input: GovernanceInput, metrics: ProxyMetrics): Promise<PreparedRequest>;
  close(): Promise<void>;
}

/** Messages to a worker. */
export type WorkerRequest =
  | {
      type: 'prepare';
      id: number;
      route: string;
      /** The client's body, moved to the worker (transferred, not copied). */
      bytes: Uint8Array;
      /** Only the headers governance reads (`GOVERNANCE_HEADERS`): the key arrives hashed. */
      requestHeaders: Array<[string, string]>;
      keyHash: string;
      arm: Arm;
      failOpen: boolean;
      recovery: boolean;
    }
  | { type: 'abort'; id: number }
  | { type: 'expand'; id: number; sessionId: string; objectId: string; scope: RecoveryScope }
  | { type: 'search'; id: number; sessionId: string; query: string; limit?: number; scope: RecoveryScope }
  | { type: 'close'; id: number };

/** A worker's answer; `prepare` answers carry the log fields, headers and metrics it set. */
export type WorkerReply = (
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { code: ErrorCode; message: string } }
) & { entry?: Partial<ProxyLogEntry>; headers?: Array<[string, string]>; metrics?: MetricOperation[] };

/**
 * The buffer to move with a message instead of copying it: only one the bytes span whole, so
 * that a view into memory shared with anything else (Node's buffer pool) is copied, never taken.
 */
export function transferOf(bytes: Uint8Array): ArrayBuffer[] {
  const { buffer } = bytes;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength
    ? [buffer]
    : [];
}

/**
 * The worker's module next to this one: `.js` when built; `.ts` when this runs from source under
 * tsx (tests, scripts), whose loader a worker does not inherit on Node 20, so it registers it.
 */
function newWorker(options: GovernanceWorkerOptions): Worker {
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./governance-worker.js', import.meta.url), { workerData: options });
  }
  const entry = new URL('./governance-worker.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData: options });
}

interface Pending {
  resolve(reply: WorkerReply): void;
}

function startWorker(options: GovernanceWorkerOptions) {
  const worker = newWorker(options);
  worker.unref();
  const pending = new Map<number, Pending>();
  let exited: SelfGcError | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, {
      resolve: (reply) =>
        reply.ok ? resolve() : reject(new SelfGcError(reply.error.code, reply.error.message)),
    });
  });
  // Awaited by every call; a failed start is reported there, not as an unhandled rejection.
  ready.catch(() => undefined);
  const failAll = (error: SelfGcError) => {
    exited = error;
    for (const [id, waiting] of pending) {
      waiting.resolve({ id, ok: false, error: { code: error.code, message: error.message } });
    }
    pending.clear();
  };
  worker.on('message', (reply: WorkerReply) => {
    const waiting = pending.get(reply.id);
    pending.delete(reply.id);
    waiting?.resolve(reply);
  });
  worker.on('error', (error) =>
    failAll(new SelfGcError('internal', `governance worker failed: ${error.message}`)),
  );
  worker.on('exit', (code) => failAll(new SelfGcError('internal', `governance worker exited (${code})`)));
  let nextId = 1;
  const call = async (
    message: WorkerRequest | ((id: number) => WorkerRequest),
    transfer: ArrayBuffer[] = [],
  ): Promise<WorkerReply> => {
    await ready;
    const request = typeof message === 'function' ? message(nextId++) : message;
    if (exited !== undefined) throw exited;
    return new Promise((resolve) => {
      pending.set(request.id, { resolve });
      worker.postMessage(request, transfer);
    });
  };
  return { worker, ready, call, exited: () => exited };
}

type StartedWorker = ReturnType<typeof startWorker>;

function resultOf(reply: WorkerReply): unknown {
  if (!reply.ok) throw new SelfGcError(reply.error.code, reply.error.message);
  return reply.value;
}

export function createGovernanceWorkers(options: GovernanceWorkersOptions): GovernanceWorkers {
  const { threads = 1, ...workerOptions } = options;
  const workers: StartedWorker[] = [];
  // A worker that died is replaced at its next request; the one that failed is answered 500.
  let closed = false;
  const workerAt = (index: number): StartedWorker => {
    if (closed) throw new SelfGcError('internal', 'governance workers are closed');
    let started = workers[index];
    if (started === undefined || started.exited() !== undefined) {
      started = startWorker(workerOptions);
      workers[index] = started;
    }
    return started;
  };
  const workerFor = (affinity: string): StartedWorker => {
    if (workers.length <= 1) return workerAt(0);
    const slot = createHash('sha256').update(affinity).digest().readUInt32BE(0) % workers.length;
    return workerAt(slot);
  };

  const recoveryGovernor = (started: StartedWorker, scope: RecoveryScope): RecoveryGovernor => ({
    expand: async (sessionId, objectId) =>
      resultOf(await started.call((id) => ({ type: 'expand', id, sessionId, objectId, scope }))) as
        | string
        | undefined,
    searchContext: async (sessionId, query, limit) =>
      resultOf(
        await started.call((id) => ({
          type: 'search',
          id,
          sessionId,
          query,
          scope,
          ...(limit === undefined ? {} : { limit }),
        })),
      ) as Awaited<ReturnType<RecoveryGovernor['searchContext']>>,
  });

  for (let index = 0; index < Math.max(1, threads); index += 1) workerAt(index);

  return {
    async ready() {
      await Promise.all(workers.map((started) => started.ready));
    },
    async prepare(input, metrics) {
      const session = input.requestHeaders.get(SESSION_HEADER) ?? clientSessionHint(input.requestHeaders);
      const started = workerFor(`${input.keyHash}\0${session}`);
      const requestHeaders: Array<[string, string]> = [];
      for (const name of GOVERNANCE_HEADERS) {
        const value = input.requestHeaders.get(name);
        if (value !== null) requestHeaders.push([name, value]);
      }
      let requestId = 0;
      const onAbort = () => {
        if (requestId !== 0)
          started.worker.postMessage({ type: 'abort', id: requestId } satisfies WorkerRequest);
      };
      input.signal.addEventListener('abort', onAbort, { once: true });
      let reply: WorkerReply;
      try {
        reply = await started.call((id) => {
          requestId = id;
          return {
            type: 'prepare',
            id,
            route: input.dialect.route,
            bytes: input.bytes,
            requestHeaders,
            keyHash: input.keyHash,
            arm: input.trace.arm,
            failOpen: input.failOpen,
            recovery: input.recovery,
          };
        }, transferOf(input.bytes));
      } finally {
        input.signal.removeEventListener('abort', onAbort);
      }
      Object.assign(input.trace.entry, reply.entry);
      for (const [name, value] of reply.headers ?? []) input.headers.set(name, value);
      replayMetrics(metrics, reply.metrics ?? []);
      const prepared = resultOf(reply) as PreparedUpstream;
      return prepared.recovery === undefined
        ? prepared
        : { ...prepared, governor: recoveryGovernor(started, prepared.recovery.scope) };
    },
    async close() {
      closed = true;
      const running = workers.filter((started) => started.exited() === undefined);
      await Promise.all(
        running.map(async (started) => {
          await started.call((id) => ({ type: 'close', id })).catch(() => undefined);
          await started.worker.terminate();
        }),
      );
    },
  };
}
