/**
 * The proxy as a child process, for the crash test and the load script: a store by URL
 * (`sqlite:<file>`, `memory:`, …), one upstream for both providers, the given window. Prints
 * `{"ready":"<url>"}` once listening, then one JSON log line per request (unless `--quiet`), and
 * on SIGTERM its event-loop delay and the CPU time it used before it exits.
 *
 *   node --import tsx src/proxy/testing/run-proxy-child.ts --store <store URL> --upstream <url>
 *     [--window 2000] [--port 0] [--quiet]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createStoreFromUrl } from '../../stores/parse-store-url.js';
import { createProxy } from '../create-proxy.js';
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
    },
  });
  if (values.store === undefined || values.upstream === undefined) {
    throw new Error(
      'usage: run-proxy-child --store <store URL> --upstream <url> [--window N] [--port N] [--quiet]',
    );
  }
  const store = await createStoreFromUrl(values.store);
  const proxy = createProxy({
    governor: createGovernorPool({ store, cache: 'blind' }),
    store,
    upstreams: { openai: values.upstream, anthropic: values.upstream },
    window: Number(values.window),
    failOpen: false,
    ...(values.quiet ? {} : { logger: jsonLineLogger((line) => process.stdout.write(line)) }),
  });
  const served = await serveProxy(proxy, { port: Number(values.port), host: '127.0.0.1' });
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  process.stdout.write(`${JSON.stringify({ ready: served.url })}\n`);
  process.once('SIGTERM', () => {
    // How long requests waited for this process's event loop, in ms, for the load script.
    const ms = (value: number) => Math.round(value / 1e4) / 100;
    const delay = {
      p50: ms(loopDelay.percentile(50)),
      p99: ms(loopDelay.percentile(99)),
      max: ms(loopDelay.max),
    };
    const cpu = process.cpuUsage();
    const cpuMs = { user: Math.round(cpu.user / 1000), system: Math.round(cpu.system / 1000) };
    process.stdout.write(`${JSON.stringify({ eventLoopDelayMs: delay, cpuMs })}\n`);
    void served
      .close()
      .then(() => store.close())
      .then(() => process.exit(0));
  });
}

runMain().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
