/**
 * Session mode (production style): one model call per assistant message, state carried from
 * call to call, under a window. Prices every call under prompt caching: the part of the view
 * that equals the previous call's view is a cache read, the rest is written.
 */
import { createGovernor } from '../core/governor/create-governor.js';
import type { GovernorOptions } from '../core/governor/governor-types.js';
import { countMessageTokens, createLedger, type Ledger } from '../core/ledger.js';
import type { ViewState } from '../core/operations.js';
import type { ViewItem } from '../core/project-view.js';
import { readSessionState } from '../core/session-state.js';
import type { CommitRecord } from '../core/store.js';
import type { TokenCounter } from '../core/tokens.js';
import { type Message, messageText, type Warning } from '../core/transcript.js';
import { createMemoryStore } from '../stores/memory-store.js';
import type { CommitAuditOutcome } from './aggregate-judge.js';
import {
  type AnchorVerdict,
  createAnchorLocator,
  judgeAnchors,
  neededAnchors,
} from './judges/anchor-judge.js';
import { createTokenIndex, judgeRareTokens, type RareTokenVerdict } from './judges/rare-token-judge.js';
import { commitAuditOf } from './latest-turn-audit.js';
import { recoverableMap } from './recoverable-map.js';
import { continuationAt } from './replay-cut.js';
import type { Strategy } from './strategies/strategy.js';

/** One model call of a session replay. */
export interface CallRecord {
  session: string;
  /** Index of the assistant message this call produced (the prefix is everything before). */
  cut: number;
  strategy: string;
  prefixTokens: number;
  viewTokens: number;
  /** Tokens read from the cache (the prefix shared with the previous call's view). */
  cachedTokens: number;
  committed: boolean;
  /** Whether the view differs from the full prefix. */
  changed: boolean;
  items: ViewItem[];
  state: ViewState | undefined;
  /** Object id → message indexes whose exact content the sidecar holds. */
  recoverable: Record<string, number[]>;
  verdict: AnchorVerdict | undefined;
  /** The rare-token judge's verdict, on the same calls as `verdict`. */
  rareTokens: RareTokenVerdict | undefined;
  /** What the policy reported for this call (a governor's warnings, such as a planner fallback). */
  warnings: Warning[];
  /** For the governor: the latest-turn audit of the commits this call made. */
  latestTurn?: CommitAuditOutcome;
}

/** How a session is governed call by call. */
export interface SessionPolicy {
  name: string;
  /** Returns the view for the prefix the ledger holds; `previous` is the last call's view. */
  viewFor(
    ledger: Ledger,
    previous: ViewItem[] | undefined,
  ): Promise<{
    items: ViewItem[];
    state?: ViewState;
    committed: boolean;
    warnings?: Warning[];
    /** The commits made for this call, for a policy that commits through the harness. */
    commits?: CommitRecord[];
  }>;
}

/** Key of a view item for cache matching: unchanged items by index, changed ones by content. */
function itemKey(item: ViewItem): string {
  return item.changed ? JSON.stringify(item.message) : `#${item.source}`;
}

/** Tokens of a view: as projection measured them, else counted (a baseline's changed items). */
function viewTokens(ledger: Ledger, items: readonly ViewItem[]): number {
  let total = 0;
  for (const item of items)
    total +=
      item.tokens ??
      (item.changed
        ? countMessageTokens(ledger.options.tokenCounter, item.message)
        : (ledger.messageTokens[item.source] ?? 0));
  return total;
}

/** The Self-GC governor on an in-memory store: the embedded planner unless `extra.planner` says otherwise. */
export function governorPolicy(
  name: string,
  window: number,
  tokenCounter: TokenCounter,
  cache: 'aware' | 'blind',
  extra: Partial<GovernorOptions> = {},
): SessionPolicy {
  const store = createMemoryStore();
  const governor = createGovernor({ provider: 'anthropic', window, store, tokenCounter, cache, ...extra });
  const sessionId = 'replay';
  return {
    name,
    async viewFor(ledger) {
      const result = await governor.project(sessionId, ledger.messages);
      const sources = new Map<Message, number>(ledger.messages.map((message, index) => [message, index]));
      const items = result.view.map((message, position) => {
        const source = sources.get(message);
        return source === undefined
          ? { source: position, message, changed: true }
          : { source, message, changed: false };
      });
      const { state } = await readSessionState(store, sessionId);
      return {
        items,
        state: state.objects,
        committed: result.commit !== undefined,
        warnings: result.warnings,
        commits: result.commits,
      };
    },
  };
}

/**
 * A baseline under a window. `sticky` is the cache-friendly form: earlier edits stay and the
 * strategy runs again only when the window forces it; otherwise it re-plans on every call.
 */
export function baselinePolicy(strategy: Strategy, window: number, sticky: boolean): SessionPolicy {
  return {
    name: sticky ? `${strategy.name}+sticky` : strategy.name,
    async viewFor(ledger, previous) {
      const full = ledger.messages.map((message, source) => ({ source, message, changed: false }));
      if (ledger.totalTokens <= window) return { items: full, committed: false };
      if (sticky && previous) {
        const known = new Set(previous.filter((item) => !item.changed).map((item) => item.source));
        const last = Math.max(-1, ...known);
        const extended = [...previous, ...full.slice(last + 1)];
        if (viewTokens(ledger, extended) <= window) return { items: extended, committed: false };
      }
      // Re-plan: sticky aims at half the window to leave room; per-call fills the window.
      const keep = (sticky ? window * 0.5 : window) / ledger.totalTokens;
      return { items: (await strategy.run({ ledger, keep })).items, committed: true };
    },
  };
}

export interface SessionReplayOptions {
  sessionId: string;
  messages: readonly Message[];
  policy: SessionPolicy;
  tokenCounter: TokenCounter;
  /** Judge only every n-th changed call (1 = all). */
  judgeEvery?: number;
}

/** Replay one session call by call. */
export async function replaySession(options: SessionReplayOptions): Promise<CallRecord[]> {
  const ledger = createLedger({ tokenCounter: options.tokenCounter, indexAnchors: false });
  const prefixTexts: string[] = [];
  const locator = createAnchorLocator(prefixTexts);
  const tokenIndex = createTokenIndex();
  const judgeEvery = Math.max(1, options.judgeEvery ?? 1);
  let changedCalls = 0;
  const records: CallRecord[] = [];
  let previous: ViewItem[] | undefined;
  let previousKeys: string[] = [];
  for (let cut = 1; cut < options.messages.length; cut += 1) {
    if (options.messages[cut]!.role !== 'assistant') continue;
    const appended = options.messages.slice(ledger.messages.length, cut);
    ledger.append(appended);
    for (const message of appended) prefixTexts.push(messageText(message));
    tokenIndex.append(appended);
    const { items, state, committed, warnings, commits } = await options.policy.viewFor(ledger, previous);
    const keys = items.map(itemKey);
    let shared = 0;
    while (shared < keys.length && shared < previousKeys.length && keys[shared] === previousKeys[shared])
      shared += 1;
    const tokens = viewTokens(ledger, items);
    const changed = items.length !== ledger.messages.length || items.some((item) => item.changed);
    const continuation = continuationAt(options.messages, cut);
    if (changed) changedCalls += 1;
    const judged = changed && continuation.length > 0 && (changedCalls - 1) % judgeEvery === 0;
    const verdict = judged
      ? judgeAnchors({
          ledger,
          prefixTexts,
          items,
          continuation,
          needed: neededAnchors(prefixTexts, continuation, locator),
          ...(state ? { state } : {}),
        })
      : undefined;
    const rareTokens = judged ? judgeRareTokens({ index: tokenIndex, items, continuation }) : undefined;
    records.push({
      session: options.sessionId,
      cut,
      strategy: options.policy.name,
      prefixTokens: ledger.totalTokens,
      viewTokens: tokens,
      cachedTokens: viewTokens(ledger, items.slice(0, shared)),
      committed,
      changed,
      items,
      state,
      recoverable: recoverableMap(ledger, state),
      verdict,
      rareTokens,
      warnings: warnings ?? [],
      ...(commits ? { latestTurn: commitAuditOf(ledger, commits, state, warnings ?? []) } : {}),
    });
    previous = items;
    previousKeys = keys;
  }
  return records;
}
