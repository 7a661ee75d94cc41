/**
 * A proxy over a store named by URL, for fault tests: the store opened as `selfgc proxy` opens
 * it (guarded, degraded when down), governed in worker threads or on the proxy's own thread, in
 * front of a scripted upstream; requests timed, log entries collected.
 */
import type { GuardedStore } from '../../stores/guard-store.js';
import { openGuardedStore } from '../../stores/open-guarded-store.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../../testing/scripted-upstream.js';
import { createProxy, type SelfGcProxy } from '../create-proxy.js';
import { createGovernanceWorkers, type GovernanceWorkers } from '../governance-workers.js';
import { createGovernorPool } from '../governor-pool.js';
import type { ProxyLogEntry } from '../proxy-log.js';
import type { ProxyOptions } from '../proxy-options.js';
import { authHeaders, conversationBody, ROUTE_PATHS, type WireRoute } from './agent-conversation.js';

/** The window of every fault proxy, small enough that the test conversations must be governed. */
export const FAULT_WINDOW = 2000;
export const FAULT_RESERVE = 256;
export const FAULT_TIME_BUDGET_MS = 1_000;

export interface FaultProxyOptions {
  storeUrl: string;
  /** Governance worker threads; 0 governs on the proxy's thread. */
  threads: number;
  storeTimeoutMs?: number;
  /** Breaker settings of the proxy thread's store (the workers keep the defaults). */
  guard?: { failures?: number; openMs?: number };
  proxy?: Partial<ProxyOptions>;
}

export interface TimedResponse {
  status: number;
  headers: Headers;
  text: string;
  ms: number;
}

export interface FaultProxy {
  proxy: SelfGcProxy;
  store: GuardedStore;
  upstream: ScriptedUpstream;
  logs: ProxyLogEntry[];
  /** One turn of a conversation of `turns` file reads, for `apiKey`'s session `session`. */
  turn(options: {
    apiKey: string;
    session: string;
    turns: number;
    route?: WireRoute;
  }): Promise<TimedResponse>;
  /** Any body to a governed route. */
  post(route: WireRoute, body: string, apiKey: string): Promise<TimedResponse>;
  health(): Promise<TimedResponse>;
  close(): Promise<void>;
}

async function timed(work: () => Promise<Response>): Promise<TimedResponse> {
  const started = performance.now();
  const response = await work();
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, ms: performance.now() - started };
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = await startScriptedUpstream({ script: () => ({ text: 'Reading on.' }) });
  const timeout = options.storeTimeoutMs === undefined ? {} : { timeoutMs: options.storeTimeoutMs };
  const store = await openGuardedStore(options.storeUrl, { guard: { ...timeout, ...options.guard } });
  const governance: GovernanceWorkers | undefined =
    options.threads === 0
      ? undefined
      : createGovernanceWorkers({
          storeUrl: options.storeUrl,
          threads: options.threads,
          window: FAULT_WINDOW,
          reserveOutput: FAULT_RESERVE,
          cache: 'blind',
          ...(options.storeTimeoutMs === undefined ? {} : { storeTimeoutMs: options.storeTimeoutMs }),
        });
  await governance?.ready();
  const logs: ProxyLogEntry[] = [];
  const proxy = createProxy({
    ...(governance === undefined
      ? { governor: createGovernorPool({ store, cache: 'blind' }) }
      : { governance }),
    store,
    upstreams: { openai: upstream.url, anthropic: upstream.url },
    window: FAULT_WINDOW,
    reserveOutput: FAULT_RESERVE,
    logger: (entry) => logs.push(entry),
    // However long a loaded machine takes to govern, a request is answered within about this.
    governanceTimeBudgetMs: FAULT_TIME_BUDGET_MS,
    ...options.proxy,
  });
  const post = (route: WireRoute, body: string, apiKey: string, headers: Record<string, string> = {}) =>
    timed(() =>
      proxy.handle(
        new Request(`http://proxy.test${ROUTE_PATHS[route]}`, {
          method: 'POST',
          headers: { ...authHeaders(route, apiKey), ...headers },
          body,
        }),
      ),
    );
  return {
    proxy,
    store,
    upstream,
    logs,
    turn: ({ apiKey, session, turns, route = 'chat' }) =>
      post(route, JSON.stringify(conversationBody(route, { turns, marker: session })), apiKey, {
        'x-selfgc-session': session,
      }),
    post: (route, body, apiKey) => post(route, body, apiKey),
    health: () => timed(() => proxy.handle(new Request('http://proxy.test/healthz'))),
    async close() {
      await governance?.close();
      await store.close();
      await upstream.close();
    },
  };
}
