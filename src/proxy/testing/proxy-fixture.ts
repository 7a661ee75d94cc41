/**
 * A proxy in front of a scripted upstream, for tests: governed by a real governor over a memory
 * store (unless told otherwise), with its log entries collected.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SidecarStore } from '../../core/store.js';
import type { EntryModel } from '../../core/valuator/entry-model.js';
import { createMemoryStore } from '../../stores/memory-store.js';
import { createSqliteStore } from '../../stores/sqlite-store.js';
import {
  type ScriptedUpstream,
  type ScriptedUpstreamOptions,
  startScriptedUpstream,
} from '../../testing/scripted-upstream.js';
import { providerTokenCounters } from '../../tokenizers/create-token-counter.js';
import { createProxy, type SelfGcProxy } from '../create-proxy.js';
import { createGovernanceWorkers } from '../governance-workers.js';
import { createGovernorPool } from '../governor-pool.js';
import type { ProxyLogEntry } from '../proxy-log.js';
import type { ProxyOptions } from '../proxy-options.js';
import { authHeaders, ROUTE_PATHS, type WireRoute } from './agent-conversation.js';
import { parsePrometheus, type Sample } from './parse-prometheus.js';

export const PROXY_ORIGIN = 'http://proxy.test';

export interface ProxyFixtureOptions extends Omit<ScriptedUpstreamOptions, 'script'> {
  script?: ScriptedUpstreamOptions['script'];
  /** Govern with a real governor (default true). */
  governed?: boolean;
  /** Window for every model (default 2000, small enough that the test conversations must commit). */
  window?: number;
  store?: SidecarStore;
  /**
   * Govern in this many worker threads (`createGovernanceWorkers`) over a SQLite file; `store`
   * is then a second connection to that file, for the test to read.
   */
  workers?: number;
  /**
   * Output tokens kept free when a request names no limit (default 256: the test conversations
   * are sized for a 2000-token window); `default` for the proxy's own default.
   */
  reserveOutput?: number | 'default';
  /** Count with each provider's BPE encoding, as `selfgc proxy` does (default: the approximate counter). */
  tokenizer?: 'per-provider';
  proxy?: Partial<ProxyOptions>;
  /** A valuator model for what fold indexes keep, in the workers or the in-process governor. */
  entryModel?: EntryModel | 'none';
}

export interface ProxyFixture {
  upstream: ScriptedUpstream;
  proxy: SelfGcProxy;
  store: SidecarStore;
  logs: ProxyLogEntry[];
  /** POST a JSON body to a governed route with the route's auth headers. */
  post(
    route: WireRoute,
    body: unknown,
    options?: { apiKey?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  /** Any request, in-process. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  metrics(): Promise<Sample[]>;
  close(): Promise<void>;
}

export async function startProxyFixture(options: ProxyFixtureOptions = {}): Promise<ProxyFixture> {
  const {
    governed,
    window,
    store: givenStore,
    workers,
    reserveOutput = 256,
    tokenizer,
    proxy: proxyOptions,
    script,
    entryModel,
    ...upstreamOptions
  } = options;
  const model = entryModel === undefined ? {} : { entryModel };
  const upstream = await startScriptedUpstream({ script: script ?? [], ...upstreamOptions });
  const directory = workers === undefined ? undefined : mkdtempSync(join(tmpdir(), 'selfgc-workers-'));
  const path = directory === undefined ? undefined : join(directory, 'selfgc.db');
  const store = givenStore ?? (path === undefined ? createMemoryStore() : createSqliteStore({ path }));
  const governance =
    path === undefined
      ? undefined
      : createGovernanceWorkers({
          storeUrl: `sqlite:${path}`,
          window: window ?? 2000,
          ...(reserveOutput === 'default' ? {} : { reserveOutput }),
          cache: 'blind',
          ...model,
          ...(workers === undefined ? {} : { threads: workers }),
          ...(tokenizer === undefined ? {} : { tokenizer }),
        });
  await governance?.ready();
  const logs: ProxyLogEntry[] = [];
  const tokenCounter = tokenizer === undefined ? undefined : providerTokenCounters();
  const proxy = createProxy({
    ...(governed === false
      ? {}
      : governance === undefined
        ? {
            governor: createGovernorPool({
              store,
              cache: 'blind',
              ...model,
              ...(tokenCounter ? { tokenCounter } : {}),
            }),
          }
        : { governance }),
    ...(tokenCounter ? { tokenCounter } : {}),
    store,
    upstreams: { openai: upstream.url, anthropic: upstream.url },
    window: window ?? 2000,
    logger: (entry) => logs.push(entry),
    ...(reserveOutput === 'default' ? {} : { reserveOutput }),
    ...proxyOptions,
  });
  const fetchLocal = (path: string, init?: RequestInit) =>
    proxy.handle(new Request(`${PROXY_ORIGIN}${path}`, init));
  return {
    upstream,
    proxy,
    store,
    logs,
    post: (route, body, postOptions = {}) =>
      fetchLocal(ROUTE_PATHS[route], {
        method: 'POST',
        headers: { ...authHeaders(route, postOptions.apiKey ?? 'sk-test-key'), ...postOptions.headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    fetch: fetchLocal,
    metrics: async () => parsePrometheus(await (await fetchLocal('/metrics')).text()),
    close: async () => {
      await upstream.close();
      await governance?.close();
      await store.close();
      if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    },
  };
}
