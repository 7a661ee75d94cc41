/**
 * Governance off the proxy's event loop: worker threads that each open the store themselves and
 * run `prepareUpstream` (parse, find the session, govern, serialise) for the requests handed to
 * them, and a lane worker that reduces the requests governance does not take into the window
 * without a store. The proxy's thread only reads and writes sockets.
 *
 * Fair by construction: one request per worker at a time, waiting requests queued per tenant
 * and served in turn; a body over the size budget goes straight to the lane worker, and a request
 * still waiting or governing when its time budget runs out goes there too, so neither a huge body
 * nor one tenant's burst holds anyone else's requests. A request prefers the worker that governed
 * its session before (its ledger cache); the store stays the source of truth, as for several
 * proxy instances. Pass the result as the proxy's `governance` and close it after the server.
 */
import { availableParallelism } from 'node:os';
import { type ErrorCode, SelfGcError } from '../core/errors.js';
import type { AgentPlanResult, RecoveryScope } from '../core/governor/governor-types.js';
import type { Plan } from '../core/operations.js';
import type { EntryModel } from '../core/valuator/entry-model.js';
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
import { type BodyChunks, joinChunks, movableChunks, ownsItsBuffer } from './read-body-bytes.js';
import type { RefusedBeta } from './refused-betas.js';
import { SESSION_HEADER } from './session-identity.js';
import type { LaneReason } from './stateless-lane.js';
import type { RecoveryGovernor } from './transparent-recovery.js';
import { createWorkerScheduler, type WorkerScheduler } from './worker-scheduler.js';
import { startWorkerThread, type WorkerThread } from './worker-thread.js';

export interface GovernanceWorkerOptions {
  /** The store every worker opens (`sqlite:…`, `redis://…`, `postgres://…`). */
  storeUrl: string;
  /** Deadline of each store call in the workers, in ms (see `guardStore`; default 250). */
  storeTimeoutMs?: number;
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
  /** The valuator model for what fold indexes keep (see `GovernorOptions.entryModel`). */
  entryModel?: EntryModel | 'none';
}

export interface GovernanceWorkersOptions extends GovernanceWorkerOptions {
  /** Governance worker threads. Default `defaultGovernanceThreads()`. */
  threads?: number;
  /** How a worker thread starts (default `startWorkerThread`): tests put a failing one in its place. */
  startThread?: (data: GovernanceWorkerData) => WorkerThread;
}

/** What a worker thread is started with: governance (with a store) or the stateless lane (none). */
export type GovernanceWorkerData = GovernanceWorkerOptions & { role: 'governance' | 'lane' };

/** Governance threads where cores allow: at least two, at most four, one core left to the proxy. */
export function defaultGovernanceThreads(cores = availableParallelism()): number {
  return Math.min(4, Math.max(2, cores - 1));
}

/** What the proxy's thread hands over for one request: `prepareUpstream`'s input, settings by value. */
export type GovernanceInput = Omit<PrepareInput, 'settings' | 'transcripts' | 'bytes'> &
  Pick<PrepareInput['settings'], 'failOpen' | 'recovery' | 'agentTools'> & {
    /** The client's body: whole, or still in its chunks for the lane worker to join (`over-size`). */
    body: Uint8Array | BodyChunks;
    /** Governance that has not answered this long after the request arrived gives way to the lane. */
    timeBudgetMs?: number | undefined;
  };

export interface GovernanceWorkers {
  /** Settles once every worker has started (rejects when one could not). */
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
      /** The client's body, moved to the worker (transferred, not copied)... */
      bytes?: Uint8Array;
      /** ...or its chunks, moved too, for the worker to join (a body too big to govern). */
      chunks?: Uint8Array[];
      /** Only the headers governance reads (`GOVERNANCE_HEADERS`): the key arrives hashed. */
      requestHeaders: Array<[string, string]>;
      keyHash: string;
      arm: Arm;
      failOpen: boolean;
      recovery: boolean;
      agentTools: boolean;
      /** Through the stateless lane instead of governance, and why. */
      lane?: LaneReason;
      /** Betas the upstream refused before (`PrepareInput.refusedBetas`). */
      refusedBetas?: readonly RefusedBeta[];
      /**
       * The proxy's thread kept a copy of the body: a body governance leaves as it came is not
       * sent back (the reply's `body` is left out), saving a copy of it each way.
       */
      bodyKept?: true;
    }
  | { type: 'abort'; id: number }
  | { type: 'expand'; id: number; sessionId: string; objectId: string; scope: RecoveryScope }
  | { type: 'search'; id: number; sessionId: string; query: string; limit?: number; scope: RecoveryScope }
  /** Commit the agent's plan against the transcript of the session's request this thread prepared last. */
  | { type: 'agent-plan'; id: number; sessionId: string; plan: Plan }
  | { type: 'close'; id: number };

/**
 * A worker's answer; `prepare` answers carry the log fields, headers and metrics it set. `lost`:
 * the worker died before it answered (the failure is the thread's, not the request's).
 */
export type WorkerReply = (
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { code: ErrorCode; message: string }; lost?: true }
) & { entry?: Partial<ProxyLogEntry>; headers?: Array<[string, string]>; metrics?: MetricOperation[] };

/**
 * The buffer to move with a message instead of copying it: only one the bytes span whole, so
 * that a view into memory shared with anything else (Node's buffer pool) is copied, never taken.
 */
export function transferOf(bytes: Uint8Array): ArrayBuffer[] {
  return ownsItsBuffer(bytes) ? [bytes.buffer as ArrayBuffer] : [];
}

function resultOf(reply: WorkerReply): unknown {
  if (!reply.ok) throw new SelfGcError(reply.error.code, reply.error.message);
  return reply.value;
}

function recoveryGovernor(thread: WorkerThread, scope: RecoveryScope, agentTools: boolean): RecoveryGovernor {
  const agent: Pick<RecoveryGovernor, 'commitAgentPlan'> = agentTools
    ? {
        commitAgentPlan: async (sessionId, plan) =>
          resultOf(
            await thread.call((id) => ({ type: 'agent-plan', id, sessionId, plan })),
          ) as AgentPlanResult,
      }
    : {};
  return {
    ...agent,
    expand: async (sessionId, objectId) =>
      resultOf(await thread.call((id) => ({ type: 'expand', id, sessionId, objectId, scope }))) as
        | string
        | undefined,
    searchContext: async (sessionId, query, limit) =>
      resultOf(
        await thread.call((id) => ({
          type: 'search',
          id,
          sessionId,
          query,
          scope,
          ...(limit === undefined ? {} : { limit }),
        })),
      ) as Awaited<ReturnType<RecoveryGovernor['searchContext']>>,
  };
}

/** Ask `thread` to prepare the request with `body` (moved to it), telling it to abort if the request does. */
async function prepareOn(
  thread: WorkerThread,
  input: GovernanceInput,
  body: Uint8Array | BodyChunks,
  lane: LaneReason | undefined,
  kept?: Uint8Array | BodyChunks,
): Promise<WorkerReply> {
  const requestHeaders: Array<[string, string]> = [];
  for (const name of GOVERNANCE_HEADERS) {
    const value = input.requestHeaders.get(name);
    if (value !== null) requestHeaders.push([name, value]);
  }
  const movable = body instanceof Uint8Array ? undefined : movableChunks(body);
  let requestId = 0;
  const onAbort = () => {
    if (requestId !== 0) thread.post({ type: 'abort', id: requestId });
  };
  input.signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await thread.call(
      (id) => {
        requestId = id;
        return {
          type: 'prepare',
          id,
          route: input.dialect.route,
          ...(body instanceof Uint8Array ? { bytes: body } : { chunks: movable!.chunks }),
          requestHeaders,
          keyHash: input.keyHash,
          arm: input.trace.arm,
          failOpen: input.failOpen,
          recovery: input.recovery,
          agentTools: input.agentTools === true,
          ...(lane === undefined ? {} : { lane }),
          ...(input.refusedBetas === undefined ? {} : { refusedBetas: input.refusedBetas }),
          ...(kept === undefined ? {} : { bodyKept: true as const }),
        };
      },
      body instanceof Uint8Array
        ? transferOf(body)
        : movable!.chunks.map((chunk) => chunk.buffer as ArrayBuffer),
    );
  } finally {
    input.signal.removeEventListener('abort', onAbort);
  }
}

/**
 * What stays on the proxy's thread of a body whose joined bytes move to a worker: the chunks
 * when the bytes are a copy of them (moving the bytes leaves them whole), else a copy.
 */
function keptBody(body: Uint8Array | BodyChunks, bytes: Uint8Array): Uint8Array | BodyChunks {
  const joinedFromChunks =
    !(body instanceof Uint8Array) && body.chunks.every((chunk) => chunk.buffer !== bytes.buffer);
  return joinedFromChunks ? body : bytes.slice();
}

/**
 * A reply's log fields, headers and metrics onto the request, then its result; a result without
 * a body (the client's body as it came) gets the body `kept` on this thread.
 */
function applyReply(
  reply: WorkerReply,
  input: GovernanceInput,
  metrics: ProxyMetrics,
  thread: WorkerThread,
  kept?: Uint8Array | BodyChunks,
): PreparedRequest {
  Object.assign(input.trace.entry, reply.entry);
  for (const [name, value] of reply.headers ?? []) input.headers.set(name, value);
  replayMetrics(metrics, reply.metrics ?? []);
  const answered = resultOf(reply) as Omit<PreparedUpstream, 'body'> & { body?: Uint8Array };
  const body = answered.body ?? (kept === undefined || kept instanceof Uint8Array ? kept : joinChunks(kept));
  if (body === undefined) throw new SelfGcError('internal', 'governance sent back no body');
  const prepared: PreparedUpstream = { ...answered, body };
  return prepared.recovery === undefined
    ? prepared
    : {
        ...prepared,
        governor: recoveryGovernor(thread, prepared.recovery.scope, prepared.recovery.agentTools === true),
      };
}

export function createGovernanceWorkers(options: GovernanceWorkersOptions): GovernanceWorkers {
  const { threads = defaultGovernanceThreads(), startThread = startWorkerThread, ...workerOptions } = options;
  const governance: WorkerScheduler = createWorkerScheduler({
    threads,
    start: () => startThread({ ...workerOptions, role: 'governance' }),
  });
  const lane: WorkerScheduler = createWorkerScheduler({
    threads: 1,
    start: () => startThread({ ...workerOptions, role: 'lane' }),
  });

  /** The request through the lane worker (which has the body now: a lane worker that dies fails it). */
  async function throughLane(
    input: GovernanceInput,
    metrics: ProxyMetrics,
    body: Uint8Array | BodyChunks,
    reason: LaneReason,
  ): Promise<PreparedRequest> {
    const outcome = await lane.schedule({
      tenant: input.keyHash,
      affinity: input.keyHash,
      signal: input.signal,
      run: async (thread) => ({ thread, reply: await prepareOn(thread, input, body, reason) }),
    });
    if (!('value' in outcome)) throw new SelfGcError('internal', 'lane worker gave no answer');
    const { thread, reply } = outcome.value;
    return applyReply(reply, input, metrics, thread);
  }

  return {
    async ready() {
      await Promise.all([...governance.threads(), ...lane.threads()].map((thread) => thread.ready));
    },
    async prepare(input, metrics) {
      if (input.lane !== undefined) return throughLane(input, metrics, input.body, input.lane);
      const bytes = input.body instanceof Uint8Array ? input.body : joinChunks(input.body);
      const session = input.requestHeaders.get(SESSION_HEADER) ?? clientSessionHint(input.requestHeaders);
      // The worker gets the body; the client's bytes stay here for the lane, should governance
      // not answer: the chunks it was joined from, or a copy when it was not (they are one).
      const kept = keptBody(input.body, bytes);
      const outcome = await governance.schedule({
        tenant: input.keyHash,
        affinity: `${input.keyHash}\0${session}`,
        budgetMs: input.timeBudgetMs,
        signal: input.signal,
        run: async (thread) => ({
          thread,
          reply: await prepareOn(thread, input, bytes, undefined, kept),
        }),
      });
      if (!('value' in outcome)) return throughLane(input, metrics, kept, 'over-time');
      const { thread, reply } = outcome.value;
      if (!reply.ok && reply.lost === true && input.failOpen) {
        // The worker died under the request: the lane serves it, and the worker is replaced.
        Object.assign(input.trace.entry, { error: reply.error.code, detail: reply.error.message });
        metrics.count('selfgc_proxy_fail_open_total', { arm: input.trace.arm });
        return throughLane(input, metrics, kept, 'governance-failed');
      }
      return applyReply(reply, input, metrics, thread, kept);
    },
    async close() {
      const running = [...governance.threads(), ...lane.threads()].filter(
        (thread) => thread.exited() === undefined,
      );
      // Each worker closes its store before it is stopped.
      await Promise.all(
        running.map((thread) => thread.call((id) => ({ type: 'close', id })).catch(() => undefined)),
      );
      await Promise.all([governance.close(), lane.close()]);
    },
  };
}
