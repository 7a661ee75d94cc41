/**
 * `selfgc proxy`: the governing gateway on a port, until SIGINT or SIGTERM.
 */
import { memoizeTokenCounter } from '../core/tokens.js';
import {
  createGovernanceWorkers,
  createGovernorPool,
  createProxy,
  jsonLineLogger,
  serveProxy,
} from '../proxy/index.js';
import { createStoreFromUrl } from '../stores/parse-store-url.js';
import { loadTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CliIo } from './cli-io.js';

export const PROXY_HELP = `Usage: selfgc proxy [options]

An OpenAI- and Anthropic-compatible HTTP endpoint that governs the context of any agent pointed
at it: POST /v1/chat/completions, /v1/responses and /v1/messages are governed (streaming passes
through); every other path is forwarded untouched. GET /healthz and GET /metrics (Prometheus).

  --port N                   port to listen on (default 8787)
  --host H                   address to bind (default 127.0.0.1)
  --upstream-openai URL      OpenAI-compatible upstream (default https://api.openai.com)
  --upstream-anthropic URL   Anthropic upstream (default https://api.anthropic.com)
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
  --ab-share F               govern only this share (0..1) of accounts, by hash of the API key;
                             the rest is the control arm, forwarded as is but measured
  --fail-closed              refuse requests (503) when the store is down, instead of serving
                             them ungoverned
  --no-recovery              do not answer expand/search_context transparently
  --governance-threads N     govern in N worker threads, each with its own store connection,
                             so commits never hold the proxy's event loop (default 1; 0
                             governs on the proxy's own thread)

Sessions: the x-selfgc-session header; else the id the client sends for its conversation
(Claude Code, Codex, opencode, prompt_cache_key); else a hash of the conversation's start.
Response headers: x-selfgc-session, x-selfgc-tokens-before and -after (the prompt: messages, tool
definitions, instructions), x-selfgc-output-reserve, x-selfgc-warnings (codes), x-selfgc-commit.

Several instances share sessions through Redis or Postgres: start each with the same --store.
`;

export interface ProxyCommandOptions {
  port: number;
  host: string;
  upstreamOpenai: string;
  upstreamAnthropic: string;
  window?: number;
  /** Output tokens to keep free when a request names none. */
  reserveOutput?: number;
  store: string;
  abShare?: number;
  failClosed?: boolean;
  recovery?: boolean;
  /** Governance worker threads (default 1); 0 governs on the proxy's thread. */
  governanceThreads?: number;
}

export async function proxyCommand(io: CliIo, options: ProxyCommandOptions): Promise<number> {
  const threads = options.governanceThreads ?? 1;
  // Governing on this thread, its store takes the commits: checkpoints go to a thread of their own.
  const store = await createStoreFromUrl(
    options.store,
    threads === 0 ? { sqliteCheckpoints: 'background' } : {},
  );
  // The workers open the store by its URL; this thread's connection serves /healthz.
  const governance =
    threads === 0
      ? undefined
      : createGovernanceWorkers({
          storeUrl: options.store,
          tokenizer: 'o200k_base',
          threads,
          ...(options.window ? { window: options.window } : {}),
          ...(options.reserveOutput === undefined ? {} : { reserveOutput: options.reserveOutput }),
        });
  try {
    await governance?.ready();
  } catch (error) {
    await governance?.close();
    await store.close();
    throw error;
  }
  // The governor and the proxy count with one counter, so messages, tools and recovered pages add up.
  const tokenCounter = memoizeTokenCounter(await loadTokenCounter('o200k_base'));
  const proxy = createProxy({
    ...(governance === undefined
      ? { governor: createGovernorPool({ store, tokenCounter }) }
      : { governance }),
    tokenCounter,
    store,
    upstreams: { openai: options.upstreamOpenai, anthropic: options.upstreamAnthropic },
    ...(options.window ? { window: options.window } : {}),
    ...(options.reserveOutput === undefined ? {} : { reserveOutput: options.reserveOutput }),
    ...(options.abShare === undefined ? {} : { abSplit: { share: options.abShare } }),
    failOpen: options.failClosed !== true,
    recovery: options.recovery !== false,
    logger: jsonLineLogger(io.stderr),
  });
  const served = await serveProxy(proxy, { port: options.port, host: options.host });
  io.stderr(
    `selfgc proxy listening on ${served.url} (store ${store.kind}, ${threads === 0 ? 'governing on its own thread' : `${threads} governance thread${threads === 1 ? '' : 's'}`})\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await served.close();
  await governance?.close();
  await store.close();
  io.stderr('selfgc proxy stopped\n');
  return 0;
}
