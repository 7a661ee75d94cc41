/**
 * The proxy as a child process, for the crash test and the load script: a store by URL
 * (`sqlite:<file>`, `memory:`, …), one upstream for both providers, the given window. Prints
 * `{"ready":"<url>"}` once listening, then one JSON log line per request (unless `--quiet`), and
 * on SIGTERM its event-loop delay and the CPU time it used before it exits.
 *
 *   node --import tsx src/proxy/testing/run-proxy-child.ts --store <store URL> --upstream <url>
 *     [--window 2000|model] [--port 0] [--quiet] [--ungoverned] [--threads 1]
 *     [--tokenizer per-provider] [--time-budget MS]
 *
 * `--ungoverned` forwards every request untouched (the cost of the hop alone, for comparison);
 * `--threads N` governs in N worker threads (as `selfgc proxy` does), 0 on the proxy's thread;
 * `--window model` keeps each model's own window; `--tokenizer per-provider` counts with each
 * provider's BPE encoding, as `selfgc proxy` does (default: the approximate counter);
 * `--time-budget MS` sets governance's time budget (its wait for a worker included).
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createStoreFromUrl } from '../../stores/parse-store-url.js';
import { providerTokenCounters } from '../../tokenizers/create-token-counter.js';
import { createProxy } from '../create-proxy.js';
import { createGovernanceWorkers } from '../governance-workers.js';
import { createGovernorPool } from '../governor-pool.js';
import { jsonLineLogger } from '../proxy-log.js';
import { serveProxy } from '../serve-proxy.js';

async function runMain(): Promise<void> {
  const { values } = parseArgs({
    options: {
      store: { type: 'string' },
      upstream: { type: 'string' },
      window: { type: 'string', default: '2000' },
      port: { type: 'string', default: '0' },
      quiet: { type: 'boolean', default: false },
      ungoverned: { type: 'boolean', default: false },
      threads: { type: 'string', default: '1' },
      tokenizer: { type: 'string' },
      'time-budget': { type: 'string' },
    },
  });
  if (values.store === undefined || values.upstream === undefined) {
    throw new Error(
      'usage: run-proxy-child --store <store URL> --upstream <url> [--window N|model] [--port N] [--quiet]',
    );
  }
  const threads = Number(values.threads);
  const store = await createStoreFromUrl(
    values.store,
    threads === 0 && !values.ungoverned ? { sqliteCheckpoints: 'background' } : {},
  );
  const window = values.window === 'model' ? undefined : Number(values.window);
  if (values.tokenizer !== undefined && values.tokenizer !== 'per-provider') {
    throw new Error(`--tokenizer: expected per-provider, got ${values.tokenizer}`);
  }
  const perProvider = values.tokenizer === 'per-provider';
  const tokenCounter = perProvider ? providerTokenCounters() : undefined;
  const governance =
    values.ungoverned || threads === 0
      ? undefined
      : createGovernanceWorkers({
          storeUrl: values.store,
          cache: 'blind',
          threads,
          ...(window === undefined ? {} : { window }),
          ...(perProvider ? { tokenizer: 'per-provider' as const } : {}),
        });
  const proxy = createProxy({
    ...(values.ungoverned
      ? {}
      : governance === undefined
        ? {
            governor: createGovernorPool({
              store,
              cache: 'blind',
              ...(tokenCounter ? { tokenCounter } : {}),
            }),
          }
        : { governance }),
    ...(tokenCounter ? { tokenCounter } : {}),
    store,
    upstreams: { openai: values.upstream, anthropic: values.upstream },
    ...(window === undefined ? {} : { window }),
    failOpen: false,
    ...(values['time-budget'] === undefined ? {} : { governanceTimeBudgetMs: Number(values['time-budget']) }),
    ...(values.quiet ? {} : { logger: jsonLineLogger((line) => process.stdout.write(line)) }),
  });
  await governance?.ready();
  const served = await serveProxy(proxy, { port: Number(values.port), host: '127.0.0.1' });
  const resolutionMs = 5;
  const loopDelay = monitorEventLoopDelay({ resolution: resolutionMs });
  loopDelay.enable();
  // Garbage collection pauses (they stop the event loop too): count, total and longest, in ms,
  // in all and by kind (minor, major, incremental marking, weak callbacks).
  const gc = { count: 0, totalMs: 0, maxMs: 0 };
  const gcKinds: Record<string, { count: number; total: number; max: number }> = {};
  const kindNames: Record<number, string> = { 1: 'minor', 4: 'major', 8: 'incremental', 16: 'weak' };
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count += 1;
      gc.totalMs += entry.duration;
      gc.maxMs = Math.max(gc.maxMs, entry.duration);
      const detail = (entry as { detail?: { kind?: number } }).detail;
      const kind = kindNames[detail?.kind ?? 0] ?? 'other';
      const slot = gcKinds[kind] ?? { count: 0, total: 0, max: 0 };
      gcKinds[kind] = slot;
      slot.count += 1;
      slot.total += entry.duration;
      slot.max = Math.max(slot.max, entry.duration);
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  process.stdout.write(`${JSON.stringify({ ready: served.url })}\n`);
  process.once('SIGTERM', () => {
    // How long requests waited for this process's event loop, in ms, for the load script. The
    // histogram records the time between samples, the resolution included (an idle loop reads
    // 5.1 ms at a resolution of 5): the delay is what goes beyond it.
    const ms = (value: number) => Math.max(0, Math.round(value / 1e4 - resolutionMs * 100) / 100);
    const delay = {
      p50: ms(loopDelay.percentile(50)),
      p99: ms(loopDelay.percentile(99)),
      max: ms(loopDelay.max),
    };
    const cpu = process.cpuUsage();
    const cpuMs = { user: Math.round(cpu.user / 1000), system: Math.round(cpu.system / 1000) };
    const gcMs = {
      count: gc.count,
      total: Math.round(gc.totalMs),
      max: Math.round(gc.maxMs * 100) / 100,
      kinds: Object.entries(gcKinds)
        .map(
          ([kind, slot]) =>
            `${kind} ${slot.count}× ${Math.round(slot.total)} ms (max ${Math.round(slot.max)})`,
        )
        .join(', '),
    };
    process.stdout.write(`${JSON.stringify({ eventLoopDelayMs: delay, cpuMs, gcMs })}\n`);
    void served
      .close()
      .then(() => governance?.close())
      .then(() => store.close())
      .then(() => process.exit(0));
  });
}

runMain().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
