/**
 * The measurements of the ledger benchmark. A session is replayed call by call: before each
 * assistant message the agent makes one model call whose input is everything before it.
 */

import { createGovernor } from '../src/core/governor/create-governor.js';
import { countMessageTokens, createLedger, indexTranscript } from '../src/core/ledger.js';
import type { ObjectState, ViewState } from '../src/core/operations.js';
import { projectView } from '../src/core/project-view.js';
import { rehearsePlan } from '../src/core/rehearse-plan.js';
import type { TokenCounter } from '../src/core/tokens.js';
import type { Message } from '../src/core/transcript.js';
import type { EntryModel } from '../src/core/valuator/entry-model.js';
import { createMemoryStore } from '../src/stores/memory-store.js';
import { timeMs } from './ledger-stats.js';

/** One model call of the replay. */
export interface ReplayCall {
  /** The messages that arrived since the previous call. */
  append: readonly Message[];
  /** The call's input is the transcript before this index. */
  end: number;
  /** Committed states when the call is made. */
  state: ViewState;
}

/** Tool outputs that stay whole in the replay's state; every older one is folded. */
export const KEEP_RECENT_OUTPUTS = 3;

/**
 * The calls of a session with a realistic state each: every tool output older than the last
 * `KEEP_RECENT_OUTPUTS` folded. Folds are rendered once by the harness (`rehearsePlan` on the
 * whole session), outside any timing.
 */
export function planReplay(messages: readonly Message[], counter: TokenCounter): ReplayCall[] {
  const ledger = indexTranscript(messages, { tokenCounter: counter });
  const outputs = ledger.objects.filter((object) => object.kind === 'function' && !object.pinned);
  const folds = rehearsePlan(
    ledger,
    {},
    {
      planner: 'bench',
      operations: outputs.map((object) => ({ objectId: object.id, operation: 'fold', reason: 'bench' })),
    },
    { protectFrom: messages.length },
  ).stateAfter;
  const calls: ReplayCall[] = [];
  const state: Record<string, ObjectState> = {};
  let folded = 0;
  let previous = 0;
  const callAt = (end: number) => {
    const before = outputs.filter((object) => object.messageIndex < end);
    for (; folded < before.length - KEEP_RECENT_OUTPUTS; folded += 1) {
      const id = before[folded]!.id;
      if (folds[id]) state[id] = folds[id];
    }
    calls.push({ append: messages.slice(previous, end), end, state: { ...state } });
    previous = end;
  };
  messages.forEach((message, index) => {
    if (message.role === 'assistant' && index > 0) callAt(index);
  });
  if (messages.at(-1)?.role !== 'assistant' && previous < messages.length) callAt(messages.length);
  return calls;
}

/** Full indexing of the whole transcript, in ms. */
export function measureIndexing(messages: readonly Message[], counter: TokenCounter): number {
  return timeMs(() => indexTranscript(messages, { tokenCounter: counter }));
}

export interface IncrementalRun {
  /** Per call: append + project, and each part alone. */
  callMs: number[];
  appendMs: number[];
  projectMs: number[];
  /** View tokens of each call, as the incremental ledger accounts them. */
  viewTokens: number[];
  /** Transcript tokens each call appended. */
  appendedTokens: number[];
}

/** Replay from an empty ledger: per call, append what is new and project the view. */
export function measureIncremental(calls: readonly ReplayCall[], counter: TokenCounter): IncrementalRun {
  const ledger = createLedger({ tokenCounter: counter });
  const run: IncrementalRun = { callMs: [], appendMs: [], projectMs: [], viewTokens: [], appendedTokens: [] };
  for (const call of calls) {
    const tokensBefore = ledger.totalTokens;
    const started = performance.now();
    ledger.append(call.append);
    const appended = performance.now();
    const view = projectView(ledger, call.state);
    const ended = performance.now();
    run.callMs.push(ended - started);
    run.appendMs.push(appended - started);
    run.projectMs.push(ended - appended);
    run.viewTokens.push(view.tokens);
    run.appendedTokens.push(ledger.totalTokens - tokensBefore);
  }
  return run;
}

/** The views of the given calls (by position), projected outside any timing. */
export function collectViews(
  calls: readonly ReplayCall[],
  counter: TokenCounter,
  positions: readonly number[],
): Message[][] {
  const wanted = new Set(positions);
  const ledger = createLedger({ tokenCounter: counter });
  const views: Message[][] = [];
  calls.forEach((call, position) => {
    ledger.append(call.append);
    if (wanted.has(position)) views.push(projectView(ledger, call.state).items.map((item) => item.message));
  });
  return views;
}

export interface ReferenceRun {
  callMs: number[];
  /** Tokens counted from scratch per view: must equal the incremental accounting. */
  tokens: number[];
}

/** The naive way: every call re-tokenizes every message of its view. */
export function measureReference(
  views: readonly (readonly Message[])[],
  counter: TokenCounter,
): ReferenceRun {
  const run: ReferenceRun = { callMs: [], tokens: [] };
  for (const view of views) {
    const started = performance.now();
    let tokens = 0;
    for (const message of view) tokens += countMessageTokens(counter, message);
    run.callMs.push(performance.now() - started);
    run.tokens.push(tokens);
  }
  return run;
}

export interface GovernorRun {
  callMs: number[];
  commits: number;
  /** View tokens of the last call. */
  lastViewTokens: number;
}

/**
 * The governor end to end (memory store, embedded planner, cache-aware commits) on the same
 * calls: `project` with the whole transcript so far, as an agent loop or the proxy calls it.
 */
export async function measureGovernor(
  messages: readonly Message[],
  calls: readonly ReplayCall[],
  counter: TokenCounter,
  window: number,
  entryModel?: EntryModel,
): Promise<GovernorRun> {
  let clock = Date.UTC(2025, 2, 3, 10);
  const governor = createGovernor({
    provider: 'openai',
    window,
    store: createMemoryStore(),
    tokenCounter: counter,
    now: () => clock,
    ...(entryModel === undefined ? {} : { entryModel }),
  });
  const run: GovernorRun = { callMs: [], commits: 0, lastViewTokens: 0 };
  for (const call of calls) {
    const transcript = messages.slice(0, call.end);
    clock += 20_000;
    const started = performance.now();
    const result = await governor.project('bench', transcript);
    run.callMs.push(performance.now() - started);
    if (result.commit) run.commits += 1;
    run.lastViewTokens = result.viewTokens;
  }
  return run;
}

/** Up to `count` call positions spread evenly over the replay, the last call included. */
export function samplePositions(calls: number, count: number): number[] {
  if (calls <= count) return Array.from({ length: calls }, (_, index) => index);
  const positions = new Set<number>();
  for (let index = 1; index <= count; index += 1) positions.add(Math.round((index * calls) / count) - 1);
  return [...positions].sort((a, b) => a - b);
}
