/**
 * A governance worker thread (started by `createGovernanceWorkers`): its own store connection
 * (guarded: a deadline on every call, a breaker, opened degraded when the store is down) and
 * governors, and `prepareUpstream` for each request the proxy's thread hands it. Commits
 * (rehearsal, sidecar writes) and their garbage stay on this thread, so the requests of other
 * sessions never wait behind them on the proxy's event loop. A lane worker opens no store: it
 * only reduces requests into the window (`reduceStatelessly`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { NotFoundError, toSelfGcError } from '../core/errors.js';
import type { SidecarStore } from '../core/store.js';
import { approximateTokenCounter, type TokenCounter } from '../core/tokens.js';
import { openGuardedStore } from '../stores/open-guarded-store.js';
import { providerTokenCounters, tokenCounterForProvider } from '../tokenizers/create-token-counter.js';
import type { CommitAgentPlan } from './agent-tools.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { contextWindowOf, DEFAULT_CONTEXT_WINDOW } from './context-window.js';
import {
  type GovernanceWorkerData,
  transferOf,
  type WorkerReply,
  type WorkerRequest,
} from './governance-workers.js';
import { createGovernorPool, type GovernorFactory } from './governor-pool.js';
import { prepareUpstream } from './prepare-upstream.js';
import type { ProviderName } from './proxy-errors.js';
import type { ProxyLogEntry } from './proxy-log.js';
import { createMetricsRecorder } from './proxy-metrics.js';
import { type BodyChunks, joinChunks } from './read-body-bytes.js';
import { responsesDialect } from './responses-dialect.js';
import { LANE_NICENESS, lowerThreadPriority } from './thread-priority.js';
import { createTranscriptCache } from './transcript-cache.js';
import type { WireDialect } from './wire-dialect.js';

const DIALECTS: Readonly<Record<string, WireDialect>> = Object.fromEntries(
  [chatDialect, responsesDialect, anthropicMessagesDialect].map((dialect) => [dialect.route, dialect]),
);

/** The worker's store and governors: none for a lane worker. */
async function openGovernance(
  options: GovernanceWorkerData,
  tokenCounter: TokenCounter | ((provider: ProviderName) => TokenCounter),
): Promise<{ store?: SidecarStore; pool: GovernorFactory | undefined }> {
  if (options.role === 'lane') return { pool: undefined };
  // A commit's writes are on its request's path: checkpoints go to a thread of their own.
  const store = await openGuardedStore(options.storeUrl, {
    sqliteCheckpoints: 'background',
    ...(options.retainMs === undefined ? {} : { retainMs: options.retainMs }),
    ...(options.storeTimeoutMs === undefined ? {} : { guard: { timeoutMs: options.storeTimeoutMs } }),
  });
  const pool = createGovernorPool({
    store,
    ...(options.cache === undefined ? {} : { cache: options.cache }),
    ...(options.entryModel === undefined ? {} : { entryModel: options.entryModel }),
    tokenCounter,
  });
  return { store, pool };
}

/**
 * One counter for the governor and for what a request carries beside its messages. The lane's
 * counts are not remembered: its bodies are the largest, and a memo would keep their texts alive.
 */
function countersOf(
  options: GovernanceWorkerData,
): TokenCounter | ((provider: ProviderName) => TokenCounter) {
  if (options.tokenizer === undefined) return approximateTokenCounter;
  if (options.role === 'governance') return providerTokenCounters();
  const counters = {
    openai: tokenCounterForProvider('openai'),
    anthropic: tokenCounterForProvider('anthropic'),
  };
  return (provider) => counters[provider];
}

function chunksOf(chunks: Uint8Array[]): BodyChunks {
  return { chunks, byteLength: chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0) };
}

/** Sessions whose latest request's transcript a worker keeps for the agent's plans. */
const AGENT_PLAN_SESSIONS = 256;

async function runWorker(port: NonNullable<typeof parentPort>, options: GovernanceWorkerData) {
  // The lane takes the largest bodies: its work yields the CPU to the proxy's thread and governance.
  if (options.role === 'lane') lowerThreadPriority(LANE_NICENESS);
  const tokenCounter = countersOf(options);
  const { store, pool } = await openGovernance(options, tokenCounter);
  const windowFor = (model: string, requestHeaders: Headers) =>
    options.window ?? contextWindowOf(model, requestHeaders);
  const aborts = new Map<number, AbortController>();
  const transcripts = createTranscriptCache();
  // The agent's plans commit against the session's latest request on this thread (the one its
  // calls came in): the most recent sessions, most recently used last.
  const agentPlans = new Map<string, CommitAgentPlan>();

  const reply = (message: WorkerReply, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
  const failure = (id: number, error: unknown): WorkerReply => {
    const { code, message } = toSelfGcError(error);
    return { id, ok: false, error: { code, message } };
  };

  const handle = async (message: WorkerRequest): Promise<void> => {
    if (message.type === 'abort') {
      aborts.get(message.id)?.abort();
      return;
    }
    if (message.type === 'close') {
      await store?.close();
      reply({ id: message.id, ok: true, value: undefined });
      return;
    }
    if (message.type === 'agent-plan') {
      try {
        const commit = agentPlans.get(message.sessionId);
        if (commit === undefined)
          throw new NotFoundError('this request is no longer known: ask again next turn');
        reply({ id: message.id, ok: true, value: await commit(message.sessionId, message.plan) });
      } catch (error) {
        reply(failure(message.id, error));
      }
      return;
    }
    if (message.type === 'expand' || message.type === 'search') {
      try {
        if (pool === undefined) throw new Error('a lane worker holds no sidecar');
        // Recovery reads the sidecar only: any valid window serves.
        const governor = pool({
          provider: 'openai',
          model: '',
          window: options.window ?? DEFAULT_CONTEXT_WINDOW,
        });
        const value =
          message.type === 'expand'
            ? await governor.expand(message.sessionId, message.objectId, message.scope)
            : await governor.searchContext(message.sessionId, message.query, message.limit, message.scope);
        reply({ id: message.id, ok: true, value });
      } catch (error) {
        reply(failure(message.id, error));
      }
      return;
    }
    const controller = new AbortController();
    aborts.set(message.id, controller);
    const metrics = createMetricsRecorder();
    const entry = {} as ProxyLogEntry;
    const headers = new Headers();
    const side = () => ({ entry, headers: [...headers], metrics: metrics.operations });
    try {
      const dialect = DIALECTS[message.route];
      if (dialect === undefined) throw new Error(`no governed route ${message.route}`);
      // A body too big to govern arrives in its chunks: joined here, off the proxy's thread.
      const bytes = message.bytes ?? joinChunks(chunksOf(message.chunks ?? []));
      const prepared = await prepareUpstream({
        settings: {
          failOpen: message.failOpen,
          recovery: message.recovery,
          agentTools: message.agentTools,
          metrics,
          now: () => performance.timeOrigin + performance.now(),
          governorFor: (context) => pool?.(context),
          windowFor,
          tokenCounterFor: (provider) =>
            typeof tokenCounter === 'function' ? tokenCounter(provider) : tokenCounter,
          reserveOutput: options.reserveOutput,
        },
        dialect,
        bytes,
        requestHeaders: new Headers(message.requestHeaders),
        keyHash: message.keyHash,
        trace: { arm: message.arm, entry },
        headers,
        signal: controller.signal,
        lane: message.lane,
        transcripts,
        refusedBetas: message.refusedBetas,
      });
      const { governor, settle, ...value } = prepared;
      if (governor?.commitAgentPlan && value.recovery) {
        agentPlans.delete(value.recovery.sessionId);
        agentPlans.set(value.recovery.sessionId, governor.commitAgentPlan);
        if (agentPlans.size > AGENT_PLAN_SESSIONS) agentPlans.delete(agentPlans.keys().next().value!);
      }
      // A governed body goes back moved, not copied. The client's own bytes (a body governance
      // left as it came) stay here for the transcript cache's next request: the proxy's thread
      // uses the copy it kept, or, if it kept none, gets a copy.
      const asCame = value.body === bytes;
      const { body, ...rest } = value;
      const answer = asCame && message.bodyKept === true ? rest : value;
      reply({ id: message.id, ok: true, value: answer, ...side() }, asCame ? [] : transferOf(body));
      // Counted while the request goes upstream, before the next one is taken.
      settle?.();
    } catch (error) {
      reply({ ...failure(message.id, error), ...side() });
    } finally {
      aborts.delete(message.id);
    }
  };

  port.on('message', (message: WorkerRequest) => {
    handle(message).catch((error: unknown) => reply(failure(message.id, error)));
  });
  reply({ id: 0, ok: true, value: 'ready' });
}

if (parentPort !== null) {
  const port = parentPort;
  runWorker(port, workerData as GovernanceWorkerData).catch((error: unknown) => {
    const { code, message } = toSelfGcError(error);
    port.postMessage({ id: 0, ok: false, error: { code, message } } satisfies WorkerReply);
  });
}
