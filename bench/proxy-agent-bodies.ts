/**
 * The proxy load script's `--agent-bodies` mode: agent-sized requests (`agent-bodies.ts`: 200
 * tools' schemas, a conversation growing turn by turn to the target size) through the real proxy
 * on loopback (its own process, SQLite store, each provider's BPE counter, each model's window,
 * governance in a worker thread) against a scripted upstream. Every turn goes four ways back to
 * back, in turns first: straight to the upstream, through a bare Node forwarder (`bare-hop.ts`:
 * the least any proxy adds), through the proxy governing nothing, and through the governing
 * proxy; the table gives what the proxy adds against the same turn's other calls. Exits non-zero
 * when a check fails.
 *
 *   node --import tsx bench/proxy-load.ts --agent-bodies [--routes messages,responses,chat]
 *     [--sessions 1] [--target-tokens 150000] [--window <tokens>] [--threads 1]
 *     [--time-limit-s 600] [--cpu-prof-dir <dir>]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { parsePrometheus, sampleSum } from '../src/proxy/testing/parse-prometheus.js';
import { type ProxyChild, spawnProxyChild } from '../src/proxy/testing/spawn-proxy-child.js';
import { startScriptedUpstream } from '../src/testing/scripted-upstream.js';
import { AGENT_ROUTE_PATHS, type AgentRoute, approximateTokens, createAgentSession } from './agent-bodies.js';
import { type Check, checkRows, percentile, renderTable } from './proxy-load-stats.js';
import { cpuSince, threadCpuTimes } from './thread-cpu.js';

/** The most the proxy may add to a typical agent request. */
const TARGET_ADDED_P50_MS = 5;

/** The most rounds a session grows by, whatever the target. */
const MAX_ROUNDS = 400;

const PATHS = ['direct', 'bare', 'hop', 'governed'] as const;
type Path = (typeof PATHS)[number];

interface TurnTimes {
  route: AgentRoute;
  bytes: number;
  ms: Record<Path, number>;
  ok: boolean;
  problem?: string;
  governance: string | null;
  commit: boolean;
}

function authHeaders(route: AgentRoute): Record<string, string> {
  return route === 'messages'
    ? {
        'x-api-key': 'sk-agent-bodies',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      }
    : { authorization: 'Bearer sk-agent-bodies', 'content-type': 'application/json' };
}

async function timedPost(url: string, headers: Record<string, string>, body: Uint8Array) {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  return { ms: performance.now() - started, response, text };
}

async function runTurn(
  route: AgentRoute,
  body: Uint8Array,
  urls: Record<Path, string>,
  turn: number,
): Promise<TurnTimes> {
  const headers = authHeaders(route);
  const order = PATHS.map((_, index) => PATHS[(index + turn) % PATHS.length]!);
  const ms = {} as Record<Path, number>;
  let problem: string | undefined;
  let governance: string | null = null;
  let commit = false;
  for (const path of order) {
    const answer = await timedPost(`${urls[path]}${AGENT_ROUTE_PATHS[route]}`, headers, body);
    ms[path] = answer.ms;
    if (answer.response.status !== 200 || !answer.text.includes('ack agent turn')) {
      problem ??= `${path}: status ${answer.response.status}: ${answer.text.slice(0, 200)}`;
    }
    if (path === 'governed') {
      governance = answer.response.headers.get('x-selfgc-governance');
      commit = answer.response.headers.get('x-selfgc-commit') !== null;
    }
  }
  return {
    route,
    bytes: body.byteLength,
    ms,
    ok: problem === undefined,
    ...(problem === undefined ? {} : { problem }),
    governance,
    commit,
  };
}

const fixed = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');

function spread(values: readonly number[]): string {
  return `${fixed(percentile(values, 0.5))} / ${fixed(percentile(values, 0.95))} ms`;
}

/** p50 and p95 of a path over the direct call's, as ratios. */
function ratios(turns: readonly TurnTimes[], path: Path, against: Path): string {
  const of = (which: Path, fraction: number) =>
    percentile(
      turns.map((turn) => turn.ms[which]),
      fraction,
    );
  return `${fixed(of(path, 0.5) / of(against, 0.5))} / ${fixed(of(path, 0.95) / of(against, 0.95))}`;
}

function routeRows(turns: readonly TurnTimes[], label: string): Array<[string, string]> {
  const between = (path: Path, against: Path) =>
    spread(turns.map((turn) => turn.ms[path] - turn.ms[against]));
  return [
    [`${label}: direct p50 / p95`, spread(turns.map((turn) => turn.ms.direct))],
    [`${label}: added by the proxy p50 / p95 (governed − direct)`, between('governed', 'direct')],
    [`${label}: added beyond a bare Node hop p50 / p95 (governed − bare)`, between('governed', 'bare')],
    [`${label}: added by governance p50 / p95 (governed − ungoverned)`, between('governed', 'hop')],
    [`${label}: a bare Node hop p50 / p95 (bare − direct)`, between('bare', 'direct')],
    [`${label}: governed / direct, p50 and p95`, ratios(turns, 'governed', 'direct')],
    [`${label}: bare hop / direct, p50 and p95`, ratios(turns, 'bare', 'direct')],
  ];
}

/** The bare hop (`bare-hop.ts`) in its own process, once it listens. */
async function spawnBareHop(upstreamUrl: string): Promise<Pick<ProxyChild, 'process' | 'exited' | 'url'>> {
  const script = new URL('./bare-hop.ts', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--upstream', upstreamUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) =>
      resolve((JSON.parse(line) as { ready: string }).ready),
    );
    child.once('exit', (code) => reject(new Error(`bare hop exited (${String(code)})`)));
  });
  return { url, process: child, exited };
}

/** CPU per turn of each thread that used a millisecond a turn or more, and of all threads. */
function cpuRow(threads: readonly number[], count: number): string {
  const busy = threads.filter((ms) => ms >= count);
  if (busy.length === 0) return 'n/a';
  return `${busy.map((ms) => fixed(ms / count)).join(', ')} ms (all threads: ${fixed(threads.reduce((sum, ms) => sum + ms, 0) / count)} ms)`;
}

export async function runAgentBodies(args: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      'agent-bodies': { type: 'boolean' },
      routes: { type: 'string', default: 'messages,responses,chat' },
      sessions: { type: 'string', default: '1' },
      'target-tokens': { type: 'string', default: '150000' },
      window: { type: 'string' },
      threads: { type: 'string', default: '1' },
      'time-limit-s': { type: 'string', default: '600' },
      'cpu-prof-dir': { type: 'string' },
    },
  });
  const routes = values.routes.split(',') as AgentRoute[];
  for (const route of routes) {
    if (!(route in AGENT_ROUTE_PATHS)) throw new Error(`--routes: unknown route ${route}`);
  }
  const upstream = await startScriptedUpstream({ script: () => ({ text: 'ack agent turn' }) });
  const directory = mkdtempSync(join(tmpdir(), 'selfgc-agent-bodies-'));
  const children: Array<Pick<ProxyChild, 'process' | 'exited'>> = [];
  try {
    const governed = await spawnProxyChild({
      storeUrl: `sqlite:${join(directory, 'selfgc.db')}`,
      upstreamUrl: upstream.url,
      window: values.window === undefined ? 'model' : Number(values.window),
      tokenizer: 'per-provider',
      threads: Number(values.threads),
      nodeArgs:
        values['cpu-prof-dir'] === undefined
          ? []
          : ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof-dir']}`],
    });
    children.push(governed);
    const hop = await spawnProxyChild({
      storeUrl: 'memory:',
      upstreamUrl: upstream.url,
      ungoverned: true,
      quiet: true,
    });
    children.push(hop);
    const bare = await spawnBareHop(upstream.url);
    children.push(bare);
    const urls: Record<Path, string> = {
      direct: upstream.url,
      bare: bare.url,
      hop: hop.url,
      governed: governed.url,
    };
    // One small request per route first, uncounted: tokenizer tables and code load once.
    for (const route of routes) {
      const warmUp = new TextEncoder().encode(JSON.stringify(createAgentSession(route, 'warm-up').bodyAt(0)));
      await runTurn(route, warmUp, urls, 0);
    }
    upstream.requests.length = 0;
    const cpuAtStart = {
      governed: threadCpuTimes(governed.process.pid),
      hop: threadCpuTimes(hop.process.pid),
    };
    const loadAtStart = loadavg()[0]!.toFixed(2);
    const deadline = performance.now() + Number(values['time-limit-s']) * 1000;
    const turns: TurnTimes[] = [];
    const targetTokens = Number(values['target-tokens']);
    let largest = 0;
    for (const route of routes) {
      for (let index = 0; index < Number(values.sessions); index += 1) {
        const session = createAgentSession(route, `agent-bodies-${route}-${index}`);
        for (let rounds = 0; rounds < MAX_ROUNDS && performance.now() < deadline; rounds += 1) {
          const text = JSON.stringify(session.bodyAt(rounds));
          if (approximateTokens(text) > targetTokens) break;
          const body = new TextEncoder().encode(text);
          largest = Math.max(largest, body.byteLength);
          turns.push(await runTurn(route, body, urls, turns.length));
          // The upstream keeps what it received: only the latest turn's is needed.
          upstream.requests.length = 0;
        }
      }
    }
    const cpu = {
      governed: cpuSince(cpuAtStart.governed, threadCpuTimes(governed.process.pid)),
      hop: cpuSince(cpuAtStart.hop, threadCpuTimes(hop.process.pid)),
    };
    const metrics = parsePrometheus(await (await fetch(`${governed.url}/metrics`)).text());
    const overheadCount = sampleSum(metrics, 'selfgc_proxy_overhead_seconds_count');
    const overheadMs = (sampleSum(metrics, 'selfgc_proxy_overhead_seconds_sum') / overheadCount) * 1000;
    const plannerCount = sampleSum(metrics, 'selfgc_proxy_planner_seconds_count');
    const plannerMs = (sampleSum(metrics, 'selfgc_proxy_planner_seconds_sum') / plannerCount) * 1000;
    // The proxy's own log: its time per request less the upstream's (body read and sent included).
    const logged = governed.logs.filter((line) => typeof line.latencyMs === 'number');
    const inside = logged.map(
      (line) => (line.latencyMs as number) - ((line.upstreamMs as number | undefined) ?? 0),
    );
    const prepare = logged.map((line) => (line.prepareMs as number | undefined) ?? Number.NaN);
    const failures = turns.filter((turn) => !turn.ok);
    const governedTurns = turns.filter((turn) => turn.governance !== 'off' && turn.governance !== null);
    const added = percentile(
      turns.map((turn) => turn.ms.governed - turn.ms.direct),
      0.5,
    );
    const checks: Check[] = [
      {
        name: 'every request answered',
        ok: turns.length > 0 && failures.length === 0,
        detail: `${turns.length - failures.length}/${turns.length} turns ok${failures[0]?.problem ? `; first: ${failures[0].problem}` : ''}`,
      },
      {
        name: 'every request governed',
        ok: governedTurns.length === turns.length,
        detail: `${governedTurns.length}/${turns.length} (x-selfgc-governance set)`,
      },
      {
        name: `added p50 ≤ ${TARGET_ADDED_P50_MS} ms`,
        ok: added <= TARGET_ADDED_P50_MS,
        detail: `${fixed(added)} ms (median per-turn governed − direct)`,
      },
    ];
    const rows: Array<[string, string]> = [
      ['load average at start / end', `${loadAtStart} / ${loadavg()[0]!.toFixed(2)}`],
      ['routes × sessions', `${routes.join(', ')} × ${values.sessions}`],
      [
        'turns (bodies)',
        `${turns.length} (up to ${(largest / 1024).toFixed(0)} KB, ~${targetTokens} tokens; ${turns.filter((turn) => turn.commit).length} commits)`,
      ],
      ...routeRows(turns, 'all'),
      ...routes.flatMap((route) =>
        routeRows(
          turns.filter((turn) => turn.route === route),
          route,
        ),
      ),
      ['proxy overhead (own metric, mean)', `${fixed(overheadMs)} ms`],
      ['inside the proxy p50 / p95 (its log: latency less upstream)', spread(inside)],
      ['of which the prepare step p50 / p95 (worker round trip)', spread(prepare)],
      ['proxy CPU per turn by thread, governed (largest first)', cpuRow(cpu.governed, turns.length)],
      ['proxy CPU per turn by thread, ungoverned (largest first)', cpuRow(cpu.hop, turns.length)],
      ['governor.project (own metric, mean)', `${fixed(plannerMs)} ms`],
      ...checkRows(checks),
    ];
    process.stdout.write(`${renderTable(rows)}\n`);
    return checks.every((check) => check.ok) ? 0 : 1;
  } finally {
    for (const child of children) {
      child.process.kill('SIGTERM');
      await child.exited;
    }
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  }
}
