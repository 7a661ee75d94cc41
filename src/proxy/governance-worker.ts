/**
 * A governance worker thread (started by `createGovernanceWorkers`): its own store connection
 * and governors, and `prepareUpstream` for each request the proxy's thread hands it. Commits
 * (rehearsal, sidecar writes) and their garbage stay on this thread, so the requests of other
 * sessions never wait behind them on the proxy's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { toSelfGcError } from '../core/errors.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createStoreFromUrl } from '../stores/parse-store-url.js';
import { providerTokenCounters } from '../tokenizers/create-token-counter.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { contextWindowOf, DEFAULT_CONTEXT_WINDOW } from './context-window.js';
import {
  type GovernanceWorkerOptions,
  transferOf,
  type WorkerReply,
  type WorkerRequest,
} from './governance-workers.js';
import { createGovernorPool } from './governor-pool.js';
import { prepareUpstream } from './prepare-upstream.js';
import type { ProxyLogEntry } from './proxy-log.js';
import { createMetricsRecorder } from './proxy-metrics.js';
import { responsesDialect } from './responses-dialect.js';
import { createTranscriptCache } from './transcript-cache.js';
import type { WireDialect } from './wire-dialect.js';

const DIALECTS: Readonly<Record<string, WireDialect>> = Object.fromEntries(
  [chatDialect, responsesDialect, anthropicMessagesDialect].map((dialect) => [dialect.route, dialect]),
);

async function runWorker(port: NonNullable<typeof parentPort>, options: GovernanceWorkerOptions) {
  // A commit's writes are on its request's path: checkpoints go to a thread of their own.
  const store = await createStoreFromUrl(options.storeUrl, {
    sqliteCheckpoints: 'background',
    ...(options.retainMs === undefined ? {} : { retainMs: options.retainMs }),
  });
  // One counter for the governor and for what a request carries beside its messages.
  const tokenCounter = options.tokenizer === undefined ? approximateTokenCounter : providerTokenCounters();
  const pool = createGovernorPool({
    store,
    ...(options.cache === undefined ? {} : { cache: options.cache }),
    tokenCounter,
  });
  const windowFor = (model: string, requestHeaders: Headers) =>
    options.window ?? contextWindowOf(model, requestHeaders);
  const aborts = new Map<number, AbortController>();
  const transcripts = createTranscriptCache();

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
      await store.close();
      reply({ id: message.id, ok: true, value: undefined });
      return;
    }
    if (message.type === 'expand' || message.type === 'search') {
      try {
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
      const prepared = await prepareUpstream({
        settings: {
          failOpen: message.failOpen,
          recovery: message.recovery,
          metrics,
          now: () => performance.timeOrigin + performance.now(),
          governorFor: pool,
          windowFor,
          tokenCounterFor: (provider) =>
            typeof tokenCounter === 'function' ? tokenCounter(provider) : tokenCounter,
          reserveOutput: options.reserveOutput,
        },
        dialect,
        bytes: message.bytes,
        requestHeaders: new Headers(message.requestHeaders),
        keyHash: message.keyHash,
        trace: { arm: message.arm, entry },
        headers,
        signal: controller.signal,
        transcripts,
      });
      const { governor: _governor, ...value } = prepared;
      // A governed body goes back moved, not copied; the client's own bytes (a body governance
      // left as it came) are copied, since the transcript cache keeps them for the next request.
      const moved = value.body === message.bytes ? [] : transferOf(value.body);
      reply({ id: message.id, ok: true, value, ...side() }, moved);
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
  runWorker(port, workerData as GovernanceWorkerOptions).catch((error: unknown) => {
    const { code, message } = toSelfGcError(error);
    port.postMessage({ id: 0, ok: false, error: { code, message } } satisfies WorkerReply);
  });
}
