/**
 * `selfgc proxy`: the governing gateway on a port, until SIGINT or SIGTERM.
 */
import { BadInputError } from '../core/errors.js';
import type { EntryModel } from '../core/valuator/entry-model.js';
import {
  createGovernanceWorkers,
  createGovernorPool,
  createProxy,
  defaultGovernanceThreads,
  type GovernanceWorkers,
  jsonLineLogger,
  type KeylessTenancy,
  type SelfGcProxy,
  type ServedProxy,
  serveProxy,
  startRetentionSweeper,
} from '../proxy/index.js';
import type { StoreHealth } from '../stores/guard-store.js';
import { openGuardedStore } from '../stores/open-guarded-store.js';
import { storeKindOf } from '../stores/parse-store-url.js';
import { providerTokenCounters } from '../tokenizers/create-token-counter.js';
import type { CliIo } from './cli-io.js';

/** Retention of `selfgc proxy` when `--retain` is not given. */
export const DEFAULT_RETAIN = '7d';

export const PROXY_HELP = `Usage: selfgc proxy [options]

An OpenAI- and Anthropic-compatible HTTP endpoint that governs the context of any agent pointed
at it: POST /v1/chat/completions, /v1/responses and /v1/messages are governed, and /responses
and /chat/completions for a base URL without /v1 (streaming passes through; bodies in zstd, gzip,
deflate or br are decoded first); every other path is forwarded untouched. A WebSocket handshake
gets 426, which has Codex CLI use HTTP. GET /healthz and GET /metrics (Prometheus).
Codex CLI signed in with ChatGPT: --upstream-openai https://chatgpt.com/backend-api/codex, and
openai_base_url = "http://127.0.0.1:8787" in ~/.codex/config.toml.

  --port N                   port to listen on (default 8787)
  --host H                   address to bind (default 127.0.0.1)
  --upstream-openai URL      OpenAI-compatible upstream (default https://api.openai.com)
  --upstream-anthropic URL   Anthropic upstream (default https://api.anthropic.com)
  --upstream-timeout T       time the upstream has to answer (headers; the whole body when it is
                             read whole): seconds (600), or with a unit: 1500ms, 90s, 10m
                             (default 10m)
  --window N                 the model's context window, for every model: the whole request —
                             system, messages, tool definitions and the output reserve — is kept
                             inside it (default: each known model's own, e.g. 200,000 for Claude
                             Sonnet 4.5, 1,000,000 for Opus 4.6/4.7 and Sonnet 4.6 or with the
                             context-1m beta, 272,000 for GPT-5.x as Codex uses it; 128,000 for
                             models it does not know)
  --reserve-output N         output tokens to keep free when a request names no limit
                             (max_tokens, max_completion_tokens, max_output_tokens); default
                             16,384, at most a quarter of the window
  --store URL                sqlite:./selfgc.db (default), redis://..., postgres://..., memory:
                             (memory: lives in the proxy's thread, which then governs alone)
  --store-timeout T          deadline of each store call, connecting included (default 250ms;
                             a bare number is milliseconds). After 3 failures in a row the
                             store's circuit breaker opens: requests stop waiting on the store,
                             and every 2 s one call probes it. A store that is down, at start-up
                             too, only degrades the proxy: /healthz answers "degraded" and
                             requests go through the stateless lane until it answers again
  --retain T                 remove a session (its sidecar payloads, commits and state) once it
                             has not been written for T: 30m, 12h, 7d (default ${DEFAULT_RETAIN}); "off"
                             keeps sessions until "selfgc sessions purge". The proxy sweeps
                             every minute, a bounded number of sessions per sweep; on Redis,
                             session keys also carry a TTL of T
  --tenant-header NAME       tell clients without an API key apart by this request header
  --tenant-from-address      tell clients without an API key apart by their address
                             (without either, keyless clients share one namespace and get no
                             transparent recovery, so none reads another's sidecar)
  --ab-share F               govern only this share (0..1) of accounts, by hash of the API key;
                             the rest is the control arm, forwarded as is but measured
  --fail-closed              refuse requests (503) while the store is unavailable, instead of
                             serving them through the stateless lane
  --no-recovery              do not answer expand/search_context transparently
  --agent-tools              the agent-driven mode: the model also gets selfgc_fold and
                             selfgc_prune (answered by the proxy, through the same rehearsal,
                             pins and commit as the planner's) and each governed request ends
                             with the context ledger: the objects, their sizes and states, and
                             budget_used_pct (needs recovery)
  --governance-threads N     govern in N worker threads, each with its own store connection,
                             so commits never hold the proxy's event loop (default: one per
                             core but one, from 2 to 4; 0 governs on the proxy's own thread)
  --governance-max-bytes N   a body over N bytes goes through the stateless lane instead of
                             governance (default 8388608, 8 MiB)
  --governance-time-budget T time governance may take for one request, its wait for a worker
                             included (default 3000ms); then the stateless lane serves it
  --client-compaction-at N   once the prompt a client sends reaches N tokens, its answers
                             report that prompt instead of the governed one, so that the client
                             compacts its conversation itself (default 1000000; "off": never;
                             clients compact from the usage answers report, which behind the
                             proxy is otherwise the governed size, so their bodies would grow
                             until the stateless lane, then the 32 MiB limit, takes them)
  --model FILE|default|none  the valuator model that orders what fold indexes keep, as
                             \`selfgc train\` writes it; default (also without --model): the one
                             shipped, fitted on the project's recorded sessions; none: entries
                             by kind

Sessions: the x-selfgc-session header; else the id the client sends for its conversation
(Claude Code, Codex, opencode, prompt_cache_key); else a hash of the conversation's start and,
from the second call on, of its first reply (runs of one prompt at once part there).
Response headers: x-selfgc-session, x-selfgc-tokens-before and -after (the prompt: messages, tool
definitions, instructions), x-selfgc-output-reserve, x-selfgc-warnings (codes), x-selfgc-commit.

The stateless lane serves a request governance cannot take (store unavailable, body or time
over budget): with no store, its conversation is brought inside the window — the oldest tool
outputs elided first (each call keeps its result), then the oldest steps — keeping the system
prompt, the task and the latest turn, so that successive calls share a prefix. It is flagged
x-selfgc-warnings: stateless-reduction and counted in selfgc_proxy_stateless_lane_total.
Requests waiting for a governance worker are queued per tenant and served in turn.

Several instances share sessions through Redis or Postgres: start each with the same --store.
Bodies larger than 32 MiB are refused (413), and JSON nested deeper than 256 levels (400).
Errors the proxy answers itself carry a request id (x-selfgc-request-id, and request_id in the
body) naming the log line that holds the details.
`;

export interface ProxyCommandOptions {
  port: number;
  host: string;
  upstreamOpenai: string;
  upstreamAnthropic: string;
  /** Default: the proxy's (10 minutes). */
  upstreamTimeoutMs?: number;
  window?: number;
  /** Output tokens to keep free when a request names none. */
  reserveOutput?: number;
  store: string;
  /** Sessions not written for this long are removed; undefined keeps them. */
  retainMs?: number;
  tenancy?: KeylessTenancy;
  abShare?: number;
  failClosed?: boolean;
  recovery?: boolean;
  /** The agent-driven mode (`--agent-tools`). */
  agentTools?: boolean;
  /** Governance worker threads (default `defaultGovernanceThreads()`); 0 governs on the proxy's thread. */
  governanceThreads?: number;
  /** Deadline of each store call, in ms (default 250). */
  storeTimeoutMs?: number;
  /** Largest body governance takes, in bytes; larger ones take the stateless lane. */
  governanceMaxBytes?: number;
  /** Time governance may take per request, in ms; then the stateless lane takes it. */
  governanceTimeBudgetMs?: number;
  /** The prompt size from which answers report the client's whole prompt (`--client-compaction-at`). */
  clientCompactionTokens?: number | false;
  /** A valuator model for what fold indexes keep (`--model`). */
  entryModel?: EntryModel | 'none';
}

/** One JSON line on stderr when the store's breaker opens or closes (never the store's address). */
function storeEvent(io: CliIo, health: StoreHealth): void {
  io.stderr(
    `${JSON.stringify({
      time: new Date().toISOString(),
      event: 'store',
      store: health.kind,
      breaker: health.breaker,
      status: health.status,
      // Why it is down, so that a store that can never open (a wrong path) is seen at start-up.
      ...(health.status === 'down' && health.lastError !== undefined ? { error: health.lastError } : {}),
    })}\n`,
  );
}

/** Why the port cannot be had, in one line: the process then exits instead of lingering. */
function listenError(error: unknown, options: ProxyCommandOptions): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  const address = `${options.host}:${options.port}`;
  if (code === 'EADDRINUSE') {
    return new BadInputError(`--port ${options.port}: ${address} is already in use (another selfgc proxy?)`);
  }
  if (code === 'EACCES')
    return new BadInputError(`--port ${options.port}: not allowed to listen on ${address}`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
    return new BadInputError(`--host ${options.host}: no such address on this machine`);
  }
  return error;
}

/** A store that lives in the memory of the thread that opens it: each worker would have its own. */
function inProcessStore(url: string): boolean {
  return storeKindOf(url) === 'memory' || /^sqlite:(\/\/)?:memory:$/i.test(url.trim());
}

export async function proxyCommand(io: CliIo, options: ProxyCommandOptions): Promise<number> {
  const inProcess = inProcessStore(options.store);
  if (inProcess && (options.governanceThreads ?? 0) > 0)
    throw new BadInputError(
      `--store ${options.store} lives in one thread, and each governance thread would have a store of its own: leave out --governance-threads or use a sqlite file`,
    );
  // An in-process store is governed where it lives, on the proxy's thread.
  const threads = inProcess ? 0 : (options.governanceThreads ?? defaultGovernanceThreads());
  const retain = options.retainMs === undefined ? {} : { retainMs: options.retainMs };
  const storeTimeout = options.storeTimeoutMs === undefined ? {} : { storeTimeoutMs: options.storeTimeoutMs };
  const entryModel = options.entryModel === undefined ? {} : { entryModel: options.entryModel };
  // A store that is down starts the proxy degraded (requests go through the stateless lane) and
  // is used again once it answers; only a URL that can never work stops the start-up.
  // Governing on this thread, its store takes the commits: checkpoints go to a thread of their own.
  const store = await openGuardedStore(options.store, {
    ...(threads === 0 ? { sqliteCheckpoints: 'background' as const } : {}),
    ...retain,
    guard: {
      ...(options.storeTimeoutMs === undefined ? {} : { timeoutMs: options.storeTimeoutMs }),
      onChange: (health) => storeEvent(io, health),
    },
  });
  // The port first: a port in use fails at once, before any worker starts (they take seconds to
  // load their tokenizer); requests that arrive meanwhile wait for the proxy.
  let startProxy: (proxy: SelfGcProxy) => void = () => undefined;
  const started = new Promise<SelfGcProxy>((resolve) => {
    startProxy = resolve;
  });
  let served: ServedProxy;
  try {
    served = await serveProxy(
      {
        handle: async (request) => (await started).handle(request),
        // createProxy's proxies always have `answer`.
        answer: async (request) => (await started).answer!(request),
      },
      { port: options.port, host: options.host },
    );
  } catch (error) {
    await store.close();
    throw listenError(error, options);
  }
  let governance: GovernanceWorkers | undefined;
  try {
    // The workers open the store by its URL; this thread's connection serves /healthz and sweeps.
    governance =
      threads === 0
        ? undefined
        : createGovernanceWorkers({
            storeUrl: options.store,
            tokenizer: 'per-provider',
            threads,
            ...storeTimeout,
            ...(options.window ? { window: options.window } : {}),
            ...(options.reserveOutput === undefined ? {} : { reserveOutput: options.reserveOutput }),
            ...retain,
            ...entryModel,
          });
    // The governor and the proxy count with one counter, so messages, tools and recovered pages add up.
    const tokenCounter = providerTokenCounters();
    startProxy(
      createProxy({
        ...(governance === undefined
          ? { governor: createGovernorPool({ store, tokenCounter, ...entryModel }) }
          : { governance }),
        tokenCounter,
        store,
        upstreams: { openai: options.upstreamOpenai, anthropic: options.upstreamAnthropic },
        ...(options.window ? { window: options.window } : {}),
        ...(options.reserveOutput === undefined ? {} : { reserveOutput: options.reserveOutput }),
        ...(options.upstreamTimeoutMs === undefined ? {} : { upstreamTimeoutMs: options.upstreamTimeoutMs }),
        ...(options.tenancy === undefined ? {} : { tenancy: options.tenancy }),
        ...(options.abShare === undefined ? {} : { abSplit: { share: options.abShare } }),
        failOpen: options.failClosed !== true,
        ...(options.governanceMaxBytes === undefined
          ? {}
          : { governanceMaxBytes: options.governanceMaxBytes }),
        ...(options.governanceTimeBudgetMs === undefined
          ? {}
          : { governanceTimeBudgetMs: options.governanceTimeBudgetMs }),
        ...(options.clientCompactionTokens === undefined
          ? {}
          : { clientCompactionTokens: options.clientCompactionTokens }),
        recovery: options.recovery !== false,
        agentTools: options.agentTools === true,
        logger: jsonLineLogger(io.stderr),
      }),
    );
    await governance?.ready();
  } catch (error) {
    await served.close();
    await governance?.close();
    await store.close();
    throw error;
  }
  const sweeper =
    options.retainMs === undefined
      ? undefined
      : startRetentionSweeper({
          store,
          retainMs: options.retainMs,
          onSweep: (outcome) =>
            io.stderr(
              `${JSON.stringify({
                time: new Date().toISOString(),
                event: 'retention-sweep',
                ...('removed' in outcome
                  ? { removed: outcome.removed.length }
                  : { error: outcome.error.code, detail: outcome.error.message }),
              })}\n`,
            ),
        });
  const retention =
    options.retainMs === undefined ? 'sessions kept' : `sessions kept ${formatRetention(options.retainMs)}`;
  const health = store.health();
  const storeState =
    health.status === 'ok' ? `store ${store.kind}` : `store ${store.kind} unavailable: serving degraded`;
  const governing =
    threads === 0 ? 'governing on its own thread' : `${threads} governance thread${threads === 1 ? '' : 's'}`;
  io.stderr(`selfgc proxy listening on ${served.url} (${storeState}, ${retention}, ${governing})\n`);
  if (health.status !== 'ok') storeEvent(io, health);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await sweeper?.stop();
  await served.close();
  await governance?.close();
  await store.close();
  io.stderr('selfgc proxy stopped\n');
  return 0;
}

/** `7d`, `12h`, `30m`, … for the start line: the largest whole unit. */
function formatRetention(milliseconds: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (milliseconds % size === 0) return `${milliseconds / size}${unit}`;
  }
  return `${milliseconds}ms`;
}
