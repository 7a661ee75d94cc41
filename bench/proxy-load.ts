/**
 * Load script for the proxy (not a unit test): N concurrent agent sessions × T turns through the
 * proxy (its own process, SQLite store) against a scripted upstream on loopback. Each turn is
 * sent straight to the upstream and through the proxy, so the latency the proxy adds is measured
 * in the same run. Prints a table; exits non-zero when a check fails.
 *
 *   node --import tsx bench/proxy-load.ts [--sessions 200] [--turns 30] [--keys 50]
 *     [--window 8000] [--model-ms 1000] [--time-limit-s 300] [--store sqlite|memory]
 *     [--cpu-prof-dir <dir>]   (writes a CPU profile of the proxy process there)
 *     [--proxy-log]            (the proxy logs each request; prints the time spent inside it)
 *     [--proxy-node-arg <flag>]  (a node flag for the proxy process, repeatable; diagnostics)
 *     [--hop-only]             (the proxy governs nothing: what the hop alone adds; checks fail)
 *     [--threads 1]            (governance worker threads, as `selfgc proxy`; 0: on its own thread)
 *     [--big-body-mb 31]       (then small sessions alone and beside a body this big; 0: skip)
 *     [--big-body-sessions 50] [--big-body-turns 6] [--big-body-pause-ms 250]
 *
 *   node --import tsx bench/proxy-load.ts --agent-bodies [...]   (agent-sized bodies: see
 *     `proxy-agent-bodies.ts` for its options)
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { parsePrometheus, sampleSum } from '../src/proxy/testing/parse-prometheus.js';
import { spawnProxyChild } from '../src/proxy/testing/spawn-proxy-child.js';
import { createSqliteStore } from '../src/stores/sqlite-store.js';
import { startScriptedUpstream } from '../src/testing/scripted-upstream.js';
import { runAgentBodies } from './proxy-agent-bodies.js';
import { type BigBodyResult, NO_MODEL_TIME_HEADER, runBigBodyPhase } from './proxy-big-body.js';
import { planSessions, runSession } from './proxy-load-sessions.js';
import { type Check, checkRows, latencyRows, renderTable, summarize } from './proxy-load-stats.js';
import { auditSidecar } from './proxy-load-verify.js';
import { threadCpuMs } from './thread-cpu.js';

const TARGET_P50_MS = 3;
const TARGET_P99_MS = 25;
/** Small requests' p99 beside one huge body, at most this many times their p99 alone. */
const TARGET_BIG_BODY_P99_RATIO = 2;
const LOOP_RESOLUTION_MS = 5;

/** An event-loop delay sample in ms: the histogram counts the resolution in, which is no delay. */
function loopDelayMs(nanoseconds: number): number {
  return Math.max(0, Math.round(nanoseconds / 1e4 - LOOP_RESOLUTION_MS * 100) / 100);
}

/**
 * How long the scripted model "thinks" for one turn: between half and one and a half times the
 * mean, drawn from the turn's id, so the direct and the proxied call of a turn wait the same and
 * sessions drift out of step as real agents do.
 */
function modelTime(turnId: string, meanMs: number): number {
  const draw = Number.parseInt(createHash('sha256').update(turnId).digest('hex').slice(0, 8), 16) / 2 ** 32;
  return Math.round(meanMs * (0.5 + draw));
}

async function runMain(): Promise<number> {
  const { values } = parseArgs({
    options: {
      sessions: { type: 'string', default: '200' },
      turns: { type: 'string', default: '30' },
      keys: { type: 'string', default: '50' },
      window: { type: 'string', default: '8000' },
      'model-ms': { type: 'string', default: '1000' },
      'time-limit-s': { type: 'string', default: '300' },
      store: { type: 'string', default: 'sqlite' },
      'cpu-prof-dir': { type: 'string' },
      'proxy-log': { type: 'boolean', default: false },
      'hop-only': { type: 'boolean', default: false },
      threads: { type: 'string', default: '1' },
      'proxy-node-arg': { type: 'string', multiple: true, default: [] },
      'big-body-mb': { type: 'string', default: '31' },
      'big-body-sessions': { type: 'string', default: '50' },
      'big-body-turns': { type: 'string', default: '6' },
      'big-body-pause-ms': { type: 'string', default: '250' },
    },
  });
  const sessions = planSessions(Number(values.sessions), Number(values.keys));
  const turns = Number(values.turns);
  const modelMs = Number(values['model-ms']);
  const upstream = await startScriptedUpstream({
    script: (request) => {
      if (request.headers[NO_MODEL_TIME_HEADER] !== undefined) return { text: 'ok' };
      const turnId = request.headers['x-bench-turn'] ?? '?/?';
      const [marker, turn] = turnId.split('/');
      const delayMs = modelTime(turnId, modelMs);
      return { text: `ack ${marker} turn ${turn}`, ...(delayMs > 0 ? { delayMs } : {}) };
    },
  });
  const directory = mkdtempSync(join(tmpdir(), 'selfgc-proxy-load-'));
  const storePath = join(directory, 'selfgc.db');
  const sqlite = values.store === 'sqlite';
  const child = await spawnProxyChild({
    storeUrl: sqlite ? `sqlite:${storePath}` : 'memory:',
    upstreamUrl: upstream.url,
    window: Number(values.window),
    quiet: !values['proxy-log'],
    ungoverned: values['hop-only'],
    threads: Number(values.threads),
    nodeArgs: [
      ...values['proxy-node-arg'],
      ...(values['cpu-prof-dir'] === undefined
        ? []
        : ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof-dir']}`]),
    ],
  });
  try {
    const loadAverage = loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
    // This process is the load generator and the upstream: its own delays slow both paths.
    const ownLoopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    ownLoopDelay.enable();
    const ownCpuBefore = process.cpuUsage();
    const started = performance.now();
    const deadline = started + Number(values['time-limit-s']) * 1000;
    const options = { turns, upstreamUrl: upstream.url, proxyUrl: child.url, deadline };
    // Sessions start spread over one mean model time, not all in the same millisecond.
    const spread = Math.max(modelMs, 1000) / sessions.length;
    const perSession = await Promise.all(
      sessions.map(async (session) => {
        await new Promise((resolve) => setTimeout(resolve, session.index * spread));
        return runSession(session, options);
      }),
    );
    const elapsedSeconds = (performance.now() - started) / 1000;
    ownLoopDelay.disable();
    const ownCpu = process.cpuUsage(ownCpuBefore);
    const results = perSession.flat();
    const metrics = parsePrometheus(await (await fetch(`${child.url}/metrics`)).text());
    const bigBodyMb = Number(values['big-body-mb']);
    const bigBody =
      bigBodyMb > 0 && !values['hop-only']
        ? await runBigBodyPhase({
            proxyUrl: child.url,
            sessions: Number(values['big-body-sessions']),
            turns: Number(values['big-body-turns']),
            pauseMs: Number(values['big-body-pause-ms']),
            megabytes: bigBodyMb,
          })
        : undefined;
    const loadAverageAtEnd = loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
    const threads = threadCpuMs(child.process.pid);

    child.process.kill('SIGTERM');
    await child.exited;
    const exitLine = child.logs.find((line) => line.eventLoopDelayMs !== undefined);
    const loopDelay = exitLine?.eventLoopDelayMs as { p50: number; p99: number; max: number } | undefined;
    const proxyCpu = exitLine?.cpuMs as { user: number; system: number } | undefined;
    const proxyGc = exitLine?.gcMs as
      | { count: number; total: number; max: number; kinds: string }
      | undefined;
    // The memory store dies with the proxy; its sidecar is audited through a SQLite run only.
    const store = sqlite ? createSqliteStore({ path: storePath }) : undefined;
    const audit = store ? await auditSidecar(store, results).finally(() => store.close()) : undefined;

    const expected = sessions.length * turns;
    const proxied = upstream.requests.filter((request) => request.headers['x-bench-via'] === 'proxy');
    const distinct = new Set(proxied.map((request) => request.headers['x-bench-turn']));
    const failures = results.filter((result) => !result.ok);
    const direct = summarize(results.map((result) => result.directMs));
    const through = summarize(results.map((result) => result.proxyMs));
    // Each turn is sent both ways back to back, so the pair shares the machine's load of that
    // moment: the median of the per-turn differences is the typical time the proxy added. For the
    // tail, the per-turn difference charges every scheduler or GC stall of either process to the
    // proxy, so the check uses the usual p99(through proxy) − p99(direct); both are printed.
    const perTurn = summarize(results.map((result) => result.proxyMs - result.directMs));
    const addedP50 = perTurn.p50;
    const addedP99 = through.p99 - direct.p99;
    const checks: Check[] = [
      {
        name: 'every request answered',
        ok: results.length === expected && failures.length === 0,
        detail: `${results.length - failures.length}/${expected} ok${failures[0]?.problem ? `; first: ${failures[0].problem}` : ''}`,
      },
      {
        name: 'upstream got each turn once',
        ok: proxied.length === expected && distinct.size === expected,
        detail: `${proxied.length} proxied requests, ${distinct.size} distinct turns`,
      },
      ...(audit?.checks ?? []),
      {
        name: 'governance committed',
        ok: sampleSum(metrics, 'selfgc_proxy_commits_total') > 0,
        detail: `${sampleSum(metrics, 'selfgc_proxy_commits_total')} commits`,
      },
      {
        name: `added p50 ≤ ${TARGET_P50_MS} ms`,
        ok: addedP50 <= TARGET_P50_MS,
        detail: `${addedP50.toFixed(2)} ms (median per-turn difference)`,
      },
      {
        name: `added p99 ≤ ${TARGET_P99_MS} ms`,
        ok: addedP99 <= TARGET_P99_MS,
        detail: `${addedP99.toFixed(2)} ms (p99 through proxy − p99 direct)`,
      },
      ...(bigBody === undefined ? [] : [bigBodyCheck(bigBody)]),
    ];
    const overheadCount = sampleSum(metrics, 'selfgc_proxy_overhead_seconds_count');
    const overheadMean = (sampleSum(metrics, 'selfgc_proxy_overhead_seconds_sum') / overheadCount) * 1000;
    const rows: Array<[string, string]> = [
      ['load average at start / end', `${loadAverage} / ${loadAverageAtEnd}`],
      ['sessions × turns', `${sessions.length} × ${turns} (${values.keys} keys, model time ${modelMs} ms)`],
      ['wall time', `${elapsedSeconds.toFixed(1)} s`],
      [
        'throughput (through proxy)',
        `${(results.length / elapsedSeconds).toFixed(0)} req/s (plus as many direct)`,
      ],
      ...latencyRows('direct', direct),
      ...latencyRows('through proxy', through),
      ['added per turn p50 / p99', `${perTurn.p50.toFixed(2)} ms / ${perTurn.p99.toFixed(2)} ms`],
      [
        'p50 / p99 difference',
        `${(through.p50 - direct.p50).toFixed(2)} ms / ${(through.p99 - direct.p99).toFixed(2)} ms`,
      ],
      ['proxy overhead (own metric, mean)', `${overheadMean.toFixed(2)} ms`],
      [
        'proxy CPU per request (user + system, start-up included)',
        proxyCpu
          ? `${((proxyCpu.user + proxyCpu.system) / results.length).toFixed(2)} ms (${proxyCpu.user} + ${proxyCpu.system} ms in all)`
          : 'n/a',
      ],
      [
        'proxy CPU by thread (main; others, largest first)',
        threads === undefined
          ? 'n/a'
          : `${threads.main} ms; ${threads.others.map((ms) => `${ms}`).join(', ')} ms`,
      ],
      [
        'proxy event-loop delay p50 / p99 / max',
        loopDelay ? `${loopDelay.p50} / ${loopDelay.p99} / ${loopDelay.max} ms` : 'n/a',
      ],
      [
        'proxy GC pauses (count, total, longest)',
        proxyGc ? `${proxyGc.count}, ${proxyGc.total} ms, ${proxyGc.max} ms` : 'n/a',
      ],
      ['proxy GC pauses by kind', proxyGc?.kinds ?? 'n/a'],
      ...insideRows(child.logs),
      [
        'load generator and upstream CPU (this process)',
        `${((ownCpu.user + ownCpu.system) / 1000 / elapsedSeconds / 10).toFixed(0)}% of a core`,
      ],
      [
        'load generator event-loop delay p50 / p99 / max',
        [50, 99, 100]
          .map((rank) => loopDelayMs(rank === 100 ? ownLoopDelay.max : ownLoopDelay.percentile(rank)))
          .join(' / ')
          .concat(' ms'),
      ],
      [
        'governance',
        values['hop-only']
          ? 'none (hop only)'
          : Number(values.threads) === 0
            ? "on the proxy's thread"
            : `${values.threads} worker thread(s)`,
      ],
      ['store', sqlite ? 'sqlite (WAL, synchronous = NORMAL)' : 'memory (sidecar not audited)'],
      ['commits / sidecar records', audit ? `${audit.commits} / ${audit.payloads}` : 'n/a'],
      ['tokens saved', String(sampleSum(metrics, 'selfgc_proxy_tokens_saved_total'))],
      ...(bigBody === undefined ? [] : bigBodyRows(bigBody, values)),
      ...checkRows(checks),
    ];
    process.stdout.write(`${renderTable(rows)}\n`);
    return checks.every((check) => check.ok) ? 0 : 1;
  } finally {
    child.process.kill('SIGKILL');
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function bigBodyCheck(result: BigBodyResult): Check {
  const ratio = result.beside.p99 / result.alone.p99;
  return {
    name: `small p99 beside a big body ≤ ${TARGET_BIG_BODY_P99_RATIO}× alone`,
    ok:
      ratio <= TARGET_BIG_BODY_P99_RATIO &&
      result.failures === 0 &&
      result.big.every((big) => big.status === 200),
    detail: `${ratio.toFixed(2)}× (${result.beside.p99.toFixed(1)} / ${result.alone.p99.toFixed(1)} ms); ${result.failures} small failed; big answered ${result.big.map((big) => big.status).join(', ')}`,
  };
}

function bigBodyRows(result: BigBodyResult, values: Record<string, unknown>): Array<[string, string]> {
  const megabytes = ((result.big[0]?.bytes ?? 0) / 1e6).toFixed(1);
  return [
    [
      'big-body phase',
      `${String(values['big-body-sessions'])} small sessions × ${String(values['big-body-turns'])} turns, ${String(values['big-body-pause-ms'])} ms between turns, alone, then beside a ${megabytes} MB body sent ${result.big.length} time(s)`,
    ],
    ['small alone p50 / p99', `${result.alone.p50.toFixed(1)} / ${result.alone.p99.toFixed(1)} ms`],
    [
      'small beside the big body p50 / p99',
      `${result.beside.p50.toFixed(1)} / ${result.beside.p99.toFixed(1)} ms`,
    ],
    [
      'big body answered in (governance)',
      result.big.map((big) => `${big.ms.toFixed(0)} ms (${big.governance ?? 'none'})`).join(', '),
    ],
  ];
}

/**
 * With `--proxy-log`: the time each request spent inside the proxy's handler (its latency less
 * the upstream's), apart for the requests that committed.
 */
function insideRows(logs: ReadonlyArray<Record<string, unknown>>): Array<[string, string]> {
  const entries = logs.filter((line) => typeof line.latencyMs === 'number' && line.route !== 'pass-through');
  if (entries.length === 0) return [];
  const inside = (line: Record<string, unknown>) =>
    (line.latencyMs as number) - ((line.upstreamMs as number | undefined) ?? 0);
  const row = (label: string, subset: typeof entries): [string, string] => {
    const stats = summarize(subset.map(inside));
    return [
      `inside proxy, ${label} p50 / p90 / p99`,
      `${stats.p50.toFixed(2)} / ${stats.p90.toFixed(2)} / ${stats.p99.toFixed(2)} ms (${stats.count})`,
    ];
  };
  return [
    row('all', entries),
    row(
      'no commit',
      entries.filter((line) => line.commit === undefined),
    ),
    row(
      'commit',
      entries.filter((line) => line.commit !== undefined),
    ),
  ];
}

const args = process.argv.slice(2);
(args.includes('--agent-bodies') ? runAgentBodies(args) : runMain()).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
