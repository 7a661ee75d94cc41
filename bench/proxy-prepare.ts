/**
 * Diagnostic (not a check): the proxy's prepare step (parse → adapter conversion → ledger
 * append → project → render) on agent-sized bodies, in-process and one request at a time, as a
 * governance worker runs it: SQLite store, each provider's BPE counter, each model's window. Each
 * session grows turn by turn to the target size; the table gives the prepare step's time per
 * request and, beside it, what each of its stages costs on its own on the same body.
 *
 *   node --import tsx bench/proxy-prepare.ts [--routes messages,responses,chat] [--sessions 1]
 *     [--target-tokens 150000] [--window <tokens>] [--store sqlite|memory]
 *     [--arms whole,cached]  (with the transcript cache, parsing whole, or both in turns)
 *     [--prepare-only]   (no stage timings: for a CPU profile of the prepare step alone)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { transcriptChain } from '../src/core/content-hash.js';
import { parseJson } from '../src/core/errors.js';
import type { Governor } from '../src/core/governor/governor-types.js';
import type { SidecarStore } from '../src/core/store.js';
import type { Message } from '../src/core/transcript.js';
import { anthropicMessagesDialect } from '../src/proxy/anthropic-messages-dialect.js';
import { chatDialect } from '../src/proxy/chat-dialect.js';
import { contextWindowOf } from '../src/proxy/context-window.js';
import { createGovernorPool, type GovernorFactory } from '../src/proxy/governor-pool.js';
import { prepareUpstream } from '../src/proxy/prepare-upstream.js';
import type { ProxyLogEntry } from '../src/proxy/proxy-log.js';
import { createMetricsRecorder } from '../src/proxy/proxy-metrics.js';
import { decodeBodyText, encodeBodyText } from '../src/proxy/read-body-bytes.js';
import { reserveOf } from '../src/proxy/request-reserve.js';
import { responsesDialect } from '../src/proxy/responses-dialect.js';
import { createTranscriptCache, type TranscriptCache } from '../src/proxy/transcript-cache.js';
import { RECOVERY_TOOLS } from '../src/proxy/transparent-recovery.js';
import type { JsonObject, WireDialect } from '../src/proxy/wire-dialect.js';
import { createStoreFromUrl } from '../src/stores/parse-store-url.js';
import { providerTokenCounters } from '../src/tokenizers/create-token-counter.js';
import { type AgentRoute, approximateTokens, createAgentSession } from './agent-bodies.js';
import { renderTable, summarize } from './proxy-load-stats.js';

const DIALECTS: Record<AgentRoute, WireDialect> = {
  messages: anthropicMessagesDialect,
  responses: responsesDialect,
  chat: chatDialect,
};

/** The most rounds a session grows by, whatever the target. */
const MAX_ROUNDS = 400;

function record(samples: Map<string, number[]>, stage: string, started: number): void {
  const list = samples.get(stage) ?? [];
  list.push(performance.now() - started);
  samples.set(stage, list);
}

function timed<T>(samples: Map<string, number[]>, stage: string, run: () => T): T {
  const started = performance.now();
  const value = run();
  record(samples, stage, started);
  return value;
}

async function timedAsync<T>(
  samples: Map<string, number[]>,
  stage: string,
  run: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  try {
    return await run();
  } finally {
    record(samples, stage, started);
  }
}

/** One way of running the prepare step: with this thread's transcript cache, or parsing whole. */
interface Arm {
  name: 'cached' | 'whole';
  store: SidecarStore;
  governorFor: GovernorFactory;
  tokenCounterFor: ReturnType<typeof providerTokenCounters>;
  transcripts?: TranscriptCache;
  commits: number;
}

async function createArm(name: Arm['name'], storeUrl: string, samples: Map<string, number[]>): Promise<Arm> {
  const store = await createStoreFromUrl(storeUrl);
  // Counters of its own: an arm must not find the texts the other counted in the memo.
  const tokenCounterFor = providerTokenCounters();
  tokenCounterFor('openai').count('loads the table');
  tokenCounterFor('anthropic').count('loads the table');
  const pool = createGovernorPool({ store, tokenCounter: tokenCounterFor, cache: 'blind' });
  const governorFor: GovernorFactory = (context) => {
    const governor = pool(context);
    return {
      ...governor,
      project: (...args: Parameters<Governor['project']>) =>
        timedAsync(samples, `${name}: project`, () => governor.project(...args)),
    };
  };
  return {
    name,
    store,
    governorFor,
    tokenCounterFor,
    ...(name === 'cached' ? { transcripts: createTranscriptCache() } : {}),
    commits: 0,
  };
}

async function runMain(): Promise<number> {
  const { values } = parseArgs({
    options: {
      routes: { type: 'string', default: 'messages,responses,chat' },
      sessions: { type: 'string', default: '1' },
      'target-tokens': { type: 'string', default: '150000' },
      window: { type: 'string' },
      store: { type: 'string', default: 'sqlite' },
      'prepare-only': { type: 'boolean', default: false },
      arms: { type: 'string', default: 'whole,cached' },
    },
  });
  const routes = values.routes.split(',') as AgentRoute[];
  for (const route of routes) {
    if (!(route in DIALECTS)) throw new Error(`--routes: unknown route ${route} (messages, responses, chat)`);
  }
  const directory = mkdtempSync(join(tmpdir(), 'selfgc-prepare-'));
  const storeUrl = (name: string) =>
    values.store === 'memory' ? 'memory:' : `sqlite:${join(directory, `${name}.db`)}`;
  const stageCounters = providerTokenCounters();
  const samples = new Map<string, number[]>();
  const arms: Arm[] = [];
  for (const name of values.arms.split(',')) {
    if (name !== 'whole' && name !== 'cached') throw new Error(`--arms: unknown arm ${name} (whole, cached)`);
    arms.push(await createArm(name, storeUrl(name), samples));
  }
  const windowFor = (model: string, headers: Headers) =>
    values.window === undefined ? contextWindowOf(model, headers) : Number(values.window);
  const targetTokens = Number(values['target-tokens']);
  let requests = 0;
  let largest = 0;
  let mismatches = 0;
  try {
    for (const route of routes) {
      const dialect = DIALECTS[route];
      for (let index = 0; index < Number(values.sessions); index += 1) {
        const session = createAgentSession(route, `prepare-${route}-${index}`);
        for (let rounds = 0; rounds < MAX_ROUNDS; rounds += 1) {
          const text = JSON.stringify(session.bodyAt(rounds));
          if (approximateTokens(text) > targetTokens) break;
          largest = Math.max(largest, text.length);
          // Both arms get the request, in turns first, so neither always runs on a warmer heap.
          const order = requests % 2 === 0 ? arms : [...arms].reverse();
          const sent = new Map<string, Uint8Array>();
          for (const arm of order) {
            const bytes = encodeBodyText(text);
            const entry = {} as ProxyLogEntry;
            const prepared = await timedAsync(samples, `${arm.name}: prepare`, () =>
              prepareUpstream({
                settings: {
                  failOpen: false,
                  recovery: true,
                  metrics: createMetricsRecorder(),
                  now: () => performance.now(),
                  governorFor: arm.governorFor,
                  windowFor,
                  tokenCounterFor: arm.tokenCounterFor,
                  reserveOutput: undefined,
                },
                dialect,
                bytes,
                requestHeaders: new Headers(),
                keyHash: 'bench',
                trace: { arm: 'governed', entry },
                headers: new Headers(),
                signal: new AbortController().signal,
                ...(arm.transcripts === undefined ? {} : { transcripts: arm.transcripts }),
              }),
            );
            // As a governance worker does once the body is on its way: not part of the request's time.
            prepared.settle?.();
            sent.set(arm.name, prepared.body);
            if (entry.commit !== undefined) arm.commits += 1;
          }
          const [left, right] = [...sent.values()];
          if (left && right && !sameUpstreamBody(left, right)) mismatches += 1;
          requests += 1;
          if (!values['prepare-only'])
            measureStages(samples, dialect, encodeBodyText(text), windowFor, stageCounters);
        }
      }
    }
  } finally {
    for (const arm of arms) await arm.store.close();
    rmSync(directory, { recursive: true, force: true });
  }
  const rows: Array<[string, string]> = [
    ['routes × sessions', `${routes.join(', ')} × ${values.sessions}`],
    [
      'requests',
      `${requests} per arm (largest body ${(largest / 1024).toFixed(0)} KB, commits ${arms.map((arm) => `${arm.name} ${arm.commits}`).join(', ')})`,
    ],
  ];
  for (const [stage, list] of samples) {
    const stats = summarize(list);
    rows.push([
      `${stage} p50 / p95 / max`,
      `${stats.p50.toFixed(2)} / ${percentile95(list).toFixed(2)} / ${stats.max.toFixed(2)} ms`,
    ]);
  }
  const whole = samples.get('whole: prepare');
  const cached = samples.get('cached: prepare');
  if (whole && cached) {
    rows.push([
      'cached / whole, p50 and p95',
      `${(summarize(cached).p50 / summarize(whole).p50).toFixed(3)} / ${(percentile95(cached) / percentile95(whole)).toFixed(3)}`,
    ]);
  }
  rows.push(['upstream bodies that differ between the arms', String(mismatches)]);
  process.stdout.write(`${renderTable(rows)}\n`);
  return mismatches === 0 ? 0 : 1;
}

/** Whether two upstream bodies are the same JSON. */
function sameUpstreamBody(left: Uint8Array, right: Uint8Array): boolean {
  return isDeepStrictEqual(JSON.parse(decodeBodyText(left)), JSON.parse(decodeBodyText(right)));
}

function percentile95(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.95 * sorted.length) - 1)] ?? Number.NaN;
}

/** Each stage of the prepare step on its own, on the same body. */
function measureStages(
  samples: Map<string, number[]>,
  dialect: WireDialect,
  bytes: Uint8Array,
  windowFor: (model: string, headers: Headers) => number,
  tokenCounterFor: ReturnType<typeof providerTokenCounters>,
): void {
  const body = timed(
    samples,
    'whole, alone: parse',
    () => parseJson(decodeBodyText(bytes), 'body') as JsonObject,
  );
  const transcript: Message[] = timed(samples, 'whole, alone: read transcript', () =>
    dialect.readTranscript(body),
  );
  timed(samples, 'whole, alone: content chain', () => transcriptChain(transcript));
  timed(samples, 'whole, alone: reserve', () =>
    reserveOf({
      dialect,
      body,
      window: windowFor(String(body.model), new Headers()),
      tokenCounter: tokenCounterFor(dialect.provider),
      proxyTools: RECOVERY_TOOLS,
    }),
  );
  timed(samples, 'whole, alone: render', () =>
    encodeBodyText(JSON.stringify(dialect.writeTranscript(body, transcript))),
  );
}

process.exitCode = await runMain();
