/**
 * Options of `createProxy`, and the resolved settings the request handlers share.
 */
import { BadInputError } from '../core/errors.js';
import type { Governor } from '../core/governor/governor-types.js';
import type { SidecarStore } from '../core/store.js';
import { approximateTokenCounter, type TokenCounter } from '../core/tokens.js';
import { guardStore, isGuardedStore, type StoreHealth } from '../stores/guard-store.js';
import type { AbSplit } from './ab-split.js';
import { fetchTransport, type UpstreamTransport } from './call-upstream.js';
import { DEFAULT_CLIENT_COMPACTION_TOKENS } from './client-compaction-signal.js';
import { contextWindowOf } from './context-window.js';
import type { GovernanceWorkers } from './governance-workers.js';
import type { GovernorContext, GovernorFactory } from './governor-pool.js';
import { nodeTransport } from './node-upstream.js';
import type { ProviderName } from './proxy-errors.js';
import type { ProxyLogEntry } from './proxy-log.js';
import { createProxyMetrics, type ProxyMetrics } from './proxy-metrics.js';
import { createRefusedBetas, type RefusedBetas } from './refused-betas.js';
import type { KeylessTenancy } from './session-identity.js';
import { createStoredResponses, type StoredResponses } from './stored-responses.js';
import { createTranscriptCache, type TranscriptCache } from './transcript-cache.js';

export interface ProxyOptions {
  /**
   * The governor, or a factory of one per provider and window (`createGovernorPool`). Without
   * one, every request is forwarded ungoverned (and still measured).
   */
  governor?: Governor | GovernorFactory;
  /**
   * Govern in worker threads instead (`createGovernanceWorkers`): each opens the store itself,
   * so commits never hold the proxy's event loop. Takes the place of `governor`.
   */
  governance?: GovernanceWorkers;
  /**
   * The store the governor writes to, probed by `/healthz` within the store's deadline (a store
   * from `guardStore` or `openGuardedStore` reports its breaker; any other is guarded for it).
   */
  store?: SidecarStore;
  /** Upstream base URLs, without `/v1` (`https://api.openai.com`, `https://api.anthropic.com`). */
  upstreams: Record<ProviderName, string>;
  /**
   * The model's context window, for every model or per model (and request headers: Anthropic's
   * long-context beta). The whole request — system, messages, tool definitions and the output
   * reserve — is kept inside it. Default: each model's real window (`contextWindowOf`).
   */
  window?: number | ((model: string, requestHeaders: Headers) => number);
  /**
   * Counts what a request needs beyond its messages (tool definitions, instructions) and what
   * transparent recovery adds to it (pages of recovered content, the window check after each
   * round): give it the governor's counter. Default: characters / 4, the governor's default.
   */
  tokenCounter?: TokenCounter | ((provider: ProviderName) => TokenCounter);
  /**
   * Output tokens to keep free when a request names no output limit (`max_tokens`,
   * `max_completion_tokens`, `max_output_tokens`). Default: 16,384, at most a quarter of the window.
   */
  reserveOutput?: number;
  /** Largest governed request body, in bytes. Default 32 MiB. */
  bodyLimitBytes?: number;
  /** Time until the upstream answers (headers; the whole body when buffered). Default 10 minutes. */
  upstreamTimeoutMs?: number;
  /**
   * When governance fails (store down), serve the request through the stateless lane — reduced
   * into the window without the store — (true, default) or refuse it with 503.
   */
  failOpen?: boolean;
  /**
   * Largest body governance takes, in bytes (default 8 MiB): a larger one goes through the
   * stateless lane, so it holds no governance worker (and no other request) for seconds.
   */
  governanceMaxBytes?: number;
  /**
   * Time governance may take for one request, its wait for a worker included, in milliseconds
   * (default 3000): then the request goes through the stateless lane, and governance, left to
   * finish, commits for the next one.
   */
  governanceTimeBudgetMs?: number;
  /**
   * Once the prompt a client sends reaches this many tokens, its answers report that prompt
   * instead of the governed one, so that the client's own compaction runs and its conversation
   * stays within what governance takes (`client-compaction-signal.ts`). Default 1,000,000;
   * false: never.
   */
  clientCompactionTokens?: number | false;
  /** Govern only a share of accounts; the rest form the control arm. Default: all governed. */
  abSplit?: AbSplit;
  /** Transparent expand/search_context, streamed or not. Default true. */
  recovery?: boolean;
  /**
   * The agent-driven mode: the model also gets `selfgc_fold` and `selfgc_prune`, answered by the
   * proxy, and each governed request ends with the context ledger (`agent-tools.ts`). Needs
   * recovery. Default false.
   */
  agentTools?: boolean;
  /**
   * How clients without an API key are told apart. Without it (or when a keyless request names
   * no tenant) all keyless requests share one namespace, so they get no transparent recovery:
   * a client could otherwise read what another one's session folded away.
   */
  tenancy?: KeylessTenancy;
  /** One structured entry per request (no keys, no message content). Default: none. */
  logger?: (entry: ProxyLogEntry) => void;
  /** Calls the upstream through this `fetch` instead of the default node:http(s) transport. */
  fetch?: typeof fetch;
  /** Clock in milliseconds, with sub-millisecond precision when available. */
  now?: () => number;
}

export interface ProxySettings {
  upstreams: Record<ProviderName, string>;
  bodyLimitBytes: number;
  upstreamTimeoutMs: number;
  failOpen: boolean;
  /** True when a governor or governance workers are configured. */
  governs: boolean;
  governanceMaxBytes: number;
  governanceTimeBudgetMs: number;
  /** The prompt size from which answers report the client's whole prompt; undefined: never. */
  clientCompactionTokens: number | undefined;
  abSplit: AbSplit | undefined;
  recovery: boolean;
  agentTools: boolean;
  recoveryRounds: number;
  tenancy: KeylessTenancy | undefined;
  /** True the first time it is called with `topic`, false after: for one-time log notices. */
  firstNotice(topic: string): boolean;
  /** The store's health, asked within its deadline; undefined without a store. */
  storeHealth: (() => Promise<StoreHealth>) | undefined;
  /** Governance worker threads, when the proxy governs off its own thread. */
  governance: GovernanceWorkers | undefined;
  /** The transcript cache of governance on the proxy's own thread (workers have their own). */
  transcripts: TranscriptCache;
  /** The stored responses merged answers stand for, for the clients that continue them. */
  storedResponses: StoredResponses;
  /** The betas the proxy adds that the upstream refused, per namespace and model. */
  refusedBetas: RefusedBetas;
  metrics: ProxyMetrics;
  upstream: UpstreamTransport;
  now: () => number;
  log: (entry: ProxyLogEntry) => void;
  /** Counts the prompt a request carries besides its messages, and what recovery adds. */
  tokenCounterFor(provider: ProviderName): TokenCounter;
  /** Output tokens to keep free when a request names none; undefined for the default. */
  reserveOutput: number | undefined;
  /** The window a request of `model` is kept inside. */
  windowFor(model: string, requestHeaders: Headers): number;
  /** The governor for a request, or undefined when the proxy governs nothing. */
  governorFor(context: GovernorContext): Governor | undefined;
}

/**
 * Largest body governed by default: a 1M-token conversation with its tools fits; a larger body
 * would hold a governance worker for seconds, so it takes the stateless lane.
 */
export const DEFAULT_GOVERNANCE_MAX_BYTES = 8 * 1024 * 1024;

/** Governance time per request by default, its wait for a worker included. */
export const DEFAULT_GOVERNANCE_TIME_BUDGET_MS = 3_000;

function healthOf(store: SidecarStore | undefined): (() => Promise<StoreHealth>) | undefined {
  if (store === undefined) return undefined;
  const guarded = isGuardedStore(store) ? store : guardStore(store);
  return () => guarded.probe();
}

function trimBase(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** Numbers that must be positive integers; anything else would misbehave silently. */
function checkProxyOptions(options: ProxyOptions): void {
  const numbers = {
    window: typeof options.window === 'number' ? options.window : undefined,
    bodyLimitBytes: options.bodyLimitBytes,
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    governanceMaxBytes: options.governanceMaxBytes,
    governanceTimeBudgetMs: options.governanceTimeBudgetMs,
    clientCompactionTokens:
      options.clientCompactionTokens === false ? undefined : options.clientCompactionTokens,
  };
  for (const [field, value] of Object.entries(numbers)) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
      throw new BadInputError(`createProxy: ${field} must be a positive integer, got ${String(value)}`);
    }
  }
  const share = options.abSplit?.share;
  if (share !== undefined && !(share >= 0 && share <= 1)) {
    throw new BadInputError(`createProxy: abSplit.share must be a number in [0, 1], got ${String(share)}`);
  }
  const header = options.tenancy?.header;
  if (header !== undefined && !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(header)) {
    throw new BadInputError(`createProxy: tenancy.header must be a header name, got "${header}"`);
  }
}

export function resolveProxySettings(options: ProxyOptions): ProxySettings {
  checkProxyOptions(options);
  const { governor, window } = options;
  const logger = options.logger;
  const noticed = new Set<string>();
  return {
    upstreams: {
      openai: trimBase(options.upstreams.openai),
      anthropic: trimBase(options.upstreams.anthropic),
    },
    bodyLimitBytes: options.bodyLimitBytes ?? 32 * 1024 * 1024,
    upstreamTimeoutMs: options.upstreamTimeoutMs ?? 600_000,
    failOpen: options.failOpen ?? true,
    governs: options.governor !== undefined || options.governance !== undefined,
    governanceMaxBytes: options.governanceMaxBytes ?? DEFAULT_GOVERNANCE_MAX_BYTES,
    governanceTimeBudgetMs: options.governanceTimeBudgetMs ?? DEFAULT_GOVERNANCE_TIME_BUDGET_MS,
    clientCompactionTokens:
      options.clientCompactionTokens === false
        ? undefined
        : (options.clientCompactionTokens ?? DEFAULT_CLIENT_COMPACTION_TOKENS),
    abSplit: options.abSplit,
    recovery: options.recovery ?? true,
    agentTools: options.agentTools === true && options.recovery !== false,
    recoveryRounds: 3,
    tenancy: options.tenancy,
    firstNotice(topic) {
      if (noticed.has(topic)) return false;
      noticed.add(topic);
      return true;
    },
    storeHealth: healthOf(options.store),
    governance: options.governance,
    transcripts: createTranscriptCache(),
    storedResponses: createStoredResponses(),
    refusedBetas: createRefusedBetas(),
    metrics: createProxyMetrics(),
    upstream: options.fetch === undefined ? nodeTransport : fetchTransport(options.fetch),
    now: options.now ?? (() => performance.timeOrigin + performance.now()),
    log: (entry) => {
      try {
        logger?.(entry);
      } catch {
        // A failing logger must not fail the request.
      }
    },
    tokenCounterFor: (provider) => {
      const counter = options.tokenCounter ?? approximateTokenCounter;
      return typeof counter === 'function' ? counter(provider) : counter;
    },
    reserveOutput: options.reserveOutput,
    windowFor(model, requestHeaders) {
      if (typeof window === 'number') return window;
      return window === undefined ? contextWindowOf(model, requestHeaders) : window(model, requestHeaders);
    },
    governorFor(context) {
      if (governor === undefined) return undefined;
      return typeof governor === 'function' ? governor(context) : governor;
    },
  };
}
