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
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CliIo } from './cli-io.js';

export const PROXY_HELP = `Usage: selfgc proxy [options]

An OpenAI- and Anthropic-compatible HTTP endpoint that governs the context of any agent pointed
at it: POST /v1/chat/completions, /v1/responses and /v1/messages are governed (streaming passes
through); every other path is forwarded untouched. GET /healthz and GET /metrics (Prometheus).

  --port N                   port to listen on (default 8787)
  --host H                   address to bind (default 127.0.0.1)
  --upstream-openai URL      OpenAI-compatible upstream (default https://api.openai.com)
  --upstream-anthropic URL   Anthropic upstream (default https://api.anthropic.com)
  --window N                 context window for every model (default: each model's real window)
  --store URL                sqlite:./selfgc.db (default), redis://..., postgres://..., memory:
  --ab-share F               govern only this share (0..1) of accounts, by hash of the API key;
                             the rest is the control arm, forwarded as is but measured
  --fail-closed              refuse requests (503) when the store is down, instead of serving
                             them ungoverned
  --no-recovery              do not answer expand/search_context transparently
  --governance-threads N     govern in N worker threads, each with its own store connection,
                             so commits never hold the proxy's event loop (default 1; 0
                             governs on the proxy's own thread)

Several instances share sessions through Redis or Postgres: start each with the same --store.
`;

export interface ProxyCommandOptions {
  port: number;
  host: string;
  upstreamOpenai: string;
  upstreamAnthropic: string;
  window?: number;
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
        });
  try {
    await governance?.ready();
  } catch (error) {
    await governance?.close();
    await store.close();
    throw error;
  }
  // Recovery counts what it appends with the governor's counter, so pages fit the same window.
  const tokenCounter = memoizeTokenCounter(createTokenCounter('o200k_base'));
  const proxy = createProxy({
    ...(governance === undefined
      ? { governor: createGovernorPool({ store, tokenCounter }) }
      : { governance }),
    tokenCounter,
    store,
    upstreams: { openai: options.upstreamOpenai, anthropic: options.upstreamAnthropic },
    ...(options.window ? { window: options.window } : {}),
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
