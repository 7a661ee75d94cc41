/**
 * Diagnostic (not a check): where the proxy's time per governed request goes, in-process and one
 * request at a time, on the load script's conversations (SQLite store, window 8000).
 *
 *   node --import tsx bench/proxy-phases.ts [--sessions 60] [--turns 30]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Governor } from '../src/core/governor/governor-types.js';
import type { SidecarStore } from '../src/core/store.js';
import { createProxy } from '../src/proxy/create-proxy.js';
import { createGovernorPool } from '../src/proxy/governor-pool.js';
import type { ProxyLogEntry } from '../src/proxy/proxy-log.js';
import { authHeaders, conversationBody, ROUTE_PATHS } from '../src/proxy/testing/agent-conversation.js';
import { createSqliteStore } from '../src/stores/sqlite-store.js';
import { startScriptedUpstream } from '../src/testing/scripted-upstream.js';
import { planSessions } from './proxy-load-sessions.js';

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function runMain(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sessions: { type: 'string', default: '60' },
      turns: { type: 'string', default: '30' },
      'heap-sampling': { type: 'boolean', default: false },
    },
  });
  const sessions = planSessions(Number(values.sessions), 50);
  const upstream = await startScriptedUpstream({ script: () => ({ text: 'ack' }) });
  const directory = mkdtempSync(join(tmpdir(), 'selfgc-phases-'));
  const store = createSqliteStore({ path: join(directory, 'selfgc.db') });
  const timings = new Map<string, number>();
  const perCall = new Map<string, number[]>();
  const add = (name: string, ms: number) => {
    timings.set(name, (timings.get(name) ?? 0) + ms);
    if (!perCall.has(name)) perCall.set(name, []);
    perCall.get(name)!.push(ms);
  };
  const timedStore = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await value.apply(target, args);
        } finally {
          add(`store.${String(property)}`, performance.now() - started);
        }
      };
    },
  }) as SidecarStore;
  const pool = createGovernorPool({ store: timedStore, cache: 'blind' });
  const governorFor: typeof pool = (context) => {
    const governor = pool(context);
    return {
      ...governor,
      project: async (...args: Parameters<Governor['project']>) => {
        const started = performance.now();
        try {
          return await governor.project(...args);
        } finally {
          add('governor.project', performance.now() - started);
        }
      },
    };
  };
  const entries: ProxyLogEntry[] = [];
  const proxy = createProxy({
    governor: governorFor,
    store: timedStore,
    upstreams: { openai: upstream.url, anthropic: upstream.url },
    window: 8000,
    failOpen: false,
    logger: (entry) => entries.push(entry),
  });
  const rows: Array<{ commit: boolean; total: number; project: number; store: number }> = [];
  const inspector = values['heap-sampling'] ? new Session() : undefined;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      inspector!.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  if (inspector) {
    inspector.connect();
    await post('HeapProfiler.startSampling', {
      samplingInterval: 32768,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  let gcMs = 0;
  let gcCount = 0;
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMs += entry.duration;
      gcCount += 1;
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  try {
    for (let turn = 1; turn <= Number(values.turns); turn += 1) {
      for (const session of sessions) {
        const body = JSON.stringify(
          conversationBody(session.route, {
            turns: turn,
            task: `Task of ${session.marker}`,
            marker: session.marker,
          }),
        );
        const headers = new Headers({
          ...authHeaders(session.route, session.apiKey),
          ...(session.sessionHeader === undefined ? {} : { 'x-selfgc-session': session.sessionHeader }),
        });
        timings.clear();
        const response = await proxy.handle(
          new Request(`http://proxy${ROUTE_PATHS[session.route]}`, { method: 'POST', headers, body }),
        );
        await response.text();
        const entry = entries.at(-1)!;
        let storeMs = 0;
        for (const [name, ms] of timings) if (name.startsWith('store.')) storeMs += ms;
        rows.push({
          commit: entry.commit !== undefined,
          total: entry.latencyMs - (entry.upstreamMs ?? 0),
          project: timings.get('governor.project') ?? 0,
          store: storeMs,
        });
      }
    }
    if (inspector) {
      const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: SamplingProfile };
      printAllocations(profile);
    }
  } finally {
    gcObserver.disconnect();
    process.stdout.write(`GC: ${gcCount} pauses, ${gcMs.toFixed(0)} ms\n`);
    await store.close();
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  }
  for (const [name, list] of perCall) {
    const total = list.reduce((a, b) => a + b, 0);
    process.stdout.write(
      `${name.padEnd(22)} n=${String(list.length).padEnd(5)} p50 ${quantile(list, 0.5).toFixed(2)} p90 ${quantile(list, 0.9).toFixed(2)} p99 ${quantile(list, 0.99).toFixed(2)} max ${Math.max(...list).toFixed(2)} total ${total.toFixed(0)} ms\n`,
    );
  }
  for (const [label, subset] of [
    ['all', rows],
    ['no commit', rows.filter((row) => !row.commit)],
    ['commit', rows.filter((row) => row.commit)],
  ] as const) {
    const line = (['total', 'project', 'store'] as const)
      .map((key) => {
        const list = subset.map((row) => row[key]);
        return `${key} p50 ${quantile(list, 0.5).toFixed(2)} p90 ${quantile(list, 0.9).toFixed(2)} mean ${(list.reduce((a, b) => a + b, 0) / list.length).toFixed(2)}`;
      })
      .join(' | ');
    process.stdout.write(`${label.padEnd(10)} n=${String(subset.length).padEnd(5)} ${line}\n`);
  }
}

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}
interface SamplingProfile {
  head: SamplingNode;
}

/** Bytes allocated, by function (self) — sampled, garbage included. */
function printAllocations(profile: SamplingProfile): void {
  const bySite = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  const visit = (node: SamplingNode, path: ReadonlySet<string>): number => {
    const frame = node.callFrame;
    const site = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\/work\/main\//, '')}:${frame.lineNumber + 1}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    total += node.selfSize;
    const inner = new Set(path).add(site);
    let sum = node.selfSize;
    for (const child of node.children) sum += visit(child, inner);
    if (!path.has(site)) inclusive.set(site, (inclusive.get(site) ?? 0) + sum);
    return sum;
  };
  visit(profile.head, new Set());
  process.stdout.write('inclusive:\n');
  for (const [site, bytes] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
    process.stdout.write(`${(bytes / 1e6).toFixed(1).padStart(8)} MB  ${site}\n`);
  }
  process.stdout.write(`allocated (sampled) ${(total / 1e6).toFixed(0)} MB\n`);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    process.stdout.write(`${(bytes / 1e6).toFixed(1).padStart(8)} MB  ${site}\n`);
  }
}

await runMain();
