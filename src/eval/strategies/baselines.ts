/**
 * The published baselines and the provider-style ones, as message-level edits on the prefix.
 * None keeps a sidecar: what they remove is gone. Each keeps the latest turn as the governor
 * does (`latestTurnStart`).
 *
 * - `oldest-turn`: drop the oldest turns (a user request or an assistant step with its tool
 *   results) until the budget holds; the system prompt and first request stay.
 * - `tool-prune`: replace the oldest tool outputs with a placeholder until the budget holds.
 * - `tool-mask-prune`: mask the oldest outputs (head and tail kept) first, then prune.
 * - `hybrid`: tool-prune down to the budget; if outputs are exhausted, oldest-turn.
 * - `clear-tool-uses`: provider context editing: clear every tool output but the last 3.
 * - `last-5-observations`: SWE-agent style: outputs older than the last 5 become one line.
 */
import { countMessageTokens, type Ledger } from '../../core/ledger.js';
import type { ViewItem } from '../../core/project-view.js';
import { latestTurnStart } from '../../core/rehearse-plan.js';
import type { Message, Part } from '../../core/transcript.js';
import {
  DEFAULT_BASELINE_KEEP,
  type StrategyInput,
  type StrategyOutput,
  type SyncStrategy,
} from './strategy.js';

interface Draft {
  items: Array<ViewItem | undefined>;
  tokens: number;
  ledger: Ledger;
}

function startDraft(ledger: Ledger): Draft {
  return {
    ledger,
    items: ledger.messages.map((message, source) => ({ source, message, changed: false })),
    tokens: ledger.totalTokens,
  };
}

function itemTokens(draft: Draft, item: ViewItem): number {
  return item.changed
    ? countMessageTokens(draft.ledger.options.tokenCounter, item.message)
    : (draft.ledger.messageTokens[item.source] ?? 0);
}

function replaceItem(draft: Draft, index: number, next: ViewItem | undefined) {
  const current = draft.items[index];
  if (current) draft.tokens -= itemTokens(draft, current);
  draft.items[index] = next;
  if (next) draft.tokens += itemTokens(draft, next);
}

function finish(draft: Draft): StrategyOutput {
  return { items: draft.items.filter((item): item is ViewItem => item !== undefined), tokens: draft.tokens };
}

function budgetOf(input: StrategyInput): number {
  const keep = input.keep === 'auto' ? DEFAULT_BASELINE_KEEP : input.keep;
  return Math.floor(input.ledger.totalTokens * keep);
}

/** Indexes of tool messages, oldest first, excluding the latest turn's. */
function toolMessageIndexes(ledger: Ledger): number[] {
  const last = latestTurnStart(ledger);
  const indexes: number[] = [];
  for (let index = 0; index < last; index += 1)
    if (ledger.messages[index]?.role === 'tool') indexes.push(index);
  return indexes;
}

function mapResults(message: Message, rewrite: (content: string) => string): Message {
  const parts: Part[] = message.parts.map((part) => {
    if (part.type !== 'tool-result') return part;
    const textValue =
      typeof part.content === 'string'
        ? part.content
        : part.content.map((inner) => (inner.type === 'text' ? inner.text : '')).join('\n');
    return { ...part, content: rewrite(textValue) };
  });
  return { ...message, parts };
}

function rewriteTool(draft: Draft, index: number, rewrite: (content: string) => string) {
  const message = draft.ledger.messages[index]!;
  const rewritten = mapResults(message, rewrite);
  // An output the rewrite leaves as it was stays the transcript's own message.
  const same = rewritten.parts.every((part, position) => {
    const original = message.parts[position];
    return (
      part.type !== 'tool-result' || (original?.type === 'tool-result' && original.content === part.content)
    );
  });
  if (!same) replaceItem(draft, index, { source: index, message: rewritten, changed: true });
}

const PLACEHOLDER = '[tool output removed]';

function maskText(content: string): string {
  const lines = content.split('\n');
  if (lines.length <= 12)
    return content.length > 800 ? `${content.slice(0, 300)}\n[… masked …]\n${content.slice(-200)}` : content;
  return [...lines.slice(0, 5), `[… ${lines.length - 10} lines masked …]`, ...lines.slice(-5)].join('\n');
}

/** Turn groups before the latest turn, oldest first: a user message, or an assistant message with its tool results. */
function turnGroups(ledger: Ledger): Array<[number, number]> {
  const groups: Array<[number, number]> = [];
  const messages = ledger.messages;
  const last = latestTurnStart(ledger);
  let firstUserSeen = false;
  for (let index = 0; index < last; index += 1) {
    const role = messages[index]?.role;
    if (role === 'system') continue;
    if (role === 'user' && !firstUserSeen) {
      firstUserSeen = true;
      continue;
    }
    let end = index + 1;
    if (role === 'assistant') while (end < last && messages[end]?.role === 'tool') end += 1;
    groups.push([index, end]);
    index = end - 1;
  }
  return groups;
}

function pruneOldestTurns(draft: Draft, budget: number) {
  for (const [start, end] of turnGroups(draft.ledger)) {
    if (draft.tokens <= budget) return;
    for (let index = start; index < end; index += 1) replaceItem(draft, index, undefined);
  }
}

function rewriteOldestTools(draft: Draft, budget: number, rewrite: (content: string) => string) {
  for (const index of toolMessageIndexes(draft.ledger)) {
    if (draft.tokens <= budget) return;
    if (draft.items[index]?.changed) continue;
    rewriteTool(draft, index, rewrite);
  }
}

const budgeted = (name: string, apply: (draft: Draft, budget: number) => void): SyncStrategy => ({
  name,
  run(input) {
    const draft = startDraft(input.ledger);
    apply(draft, budgetOf(input));
    return finish(draft);
  },
});

export const oldestTurnStrategy = budgeted('oldest-turn', pruneOldestTurns);

export const toolPruneStrategy = budgeted('tool-prune', (draft, budget) =>
  rewriteOldestTools(draft, budget, () => PLACEHOLDER),
);

export const toolMaskPruneStrategy = budgeted('tool-mask-prune', (draft, budget) => {
  rewriteOldestTools(draft, budget, maskText);
  for (const index of toolMessageIndexes(draft.ledger)) {
    if (draft.tokens <= budget) return;
    rewriteTool(draft, index, () => PLACEHOLDER);
  }
});

export const hybridStrategy = budgeted('hybrid', (draft, budget) => {
  rewriteOldestTools(draft, budget, () => PLACEHOLDER);
  pruneOldestTurns(draft, budget);
});

function keepLastOutputs(name: string, keepLast: number, rewrite: (content: string) => string): SyncStrategy {
  return {
    name,
    run(input) {
      const draft = startDraft(input.ledger);
      const tools = input.ledger.messages.flatMap((message, index) =>
        message.role === 'tool' ? [index] : [],
      );
      // The last N outputs stay, and so does the latest turn, however many calls it made.
      const kept = new Set(tools.slice(-keepLast));
      const budget = input.keep === 'auto' ? 0 : budgetOf(input);
      for (const index of toolMessageIndexes(input.ledger).filter((candidate) => !kept.has(candidate))) {
        if (draft.tokens <= budget) break;
        rewriteTool(draft, index, rewrite);
      }
      return finish(draft);
    },
  };
}

export const clearToolUsesStrategy = keepLastOutputs('clear-tool-uses', 3, () => '[cleared]');

export const lastObservationsStrategy = keepLastOutputs(
  'last-5-observations',
  5,
  (content) => `Old environment output: (${content.split('\n').length} lines omitted)`,
);

export const noneStrategy: SyncStrategy = {
  name: 'none',
  run: (input) => finish(startDraft(input.ledger)),
};
