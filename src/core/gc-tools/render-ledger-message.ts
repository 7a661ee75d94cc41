/**
 * The ledger message an agent with GC tools sees each turn: a compact, user-role list of the
 * objects it may operate on, and how much of the window the view uses. User role, not system:
 * it is information about the session, not an instruction with system authority.
 */

import { compactTokens, oneLine } from '../compact-text.js';
import { countMessageTokens, isToolOutput, type Ledger } from '../ledger.js';
import type { ViewState } from '../operations.js';
import { projectView } from '../project-view.js';
import { latestTurnStart } from '../rehearse-plan.js';
import type { Message } from '../transcript.js';
import { type LedgerRow, ledgerRows } from './ledger-rows.js';

export interface LedgerMessageOptions {
  /** At most this many object lines, the largest first (default 40); the rest are counted. */
  maxObjects?: number;
  /** Show ids as light metadata in the view (as the governor's `showIds`), for the budget figure. */
  showIds?: boolean;
  /** What the tools' names start with where they are offered under other names (`selfgc_`). */
  toolPrefix?: string;
}

function rowLine(row: LedgerRow): string {
  const flags = [
    row.state,
    ...(row.protection ? [row.protection] : []),
    ...(row.isError ? ['error'] : []),
    // The agent already acted on what it holds.
    ...(row.consumedAt !== undefined && isToolOutput(row) ? ['consumed'] : []),
  ];
  const what = row.call ?? row.head;
  return `${row.id} ${row.kind} ${compactTokens(row.tokens)} ${flags.join(',')}${what ? ` | ${oneLine(what, 80)}` : ''}`;
}

function toolLine(prefix: string): string {
  return `Tools: ${prefix}fold(id) keeps a summary and a recovery pointer; ${prefix}prune(id) drops what nothing needs; ${prefix}expand(id) recovers a folded payload; ${prefix}search_context(query) searches removed payloads. Objects marked pinned, system or latest-turn cannot be changed.`;
}

/** The share of the window the view uses, in whole percent. */
export function budgetUsedPct(viewTokens: number, window: number): number {
  return window > 0 ? Math.round((viewTokens / window) * 100) : 100;
}

/**
 * A compact user-role message: one line per object (`id kind tokens state[,protection] | what`),
 * pruned objects left out, and `budget_used_pct`.
 */
export function renderLedgerMessage(
  ledger: Ledger,
  state: ViewState,
  window: number,
  options: LedgerMessageOptions = {},
): Message {
  const viewTokens = projectView(ledger, state, { showIds: options.showIds === true }).tokens;
  const rows = ledgerRows(ledger, state, { protectFrom: latestTurnStart(ledger) }).filter(
    (row) => row.state !== 'prune',
  );
  const limit = options.maxObjects ?? 40;
  const shown = new Set(
    [...rows]
      .sort((a, b) => b.tokens - a.tokens)
      .slice(0, limit)
      .map((row) => row.id),
  );
  const omitted = rows.filter((row) => !shown.has(row.id));
  const lines = [
    `[context ledger] budget_used_pct=${budgetUsedPct(viewTokens, window)} view_tokens=${viewTokens} window=${window}`,
    ...rows.filter((row) => shown.has(row.id)).map(rowLine),
    ...(omitted.length > 0
      ? [
          `(${omitted.length} smaller objects not listed, ${compactTokens(omitted.reduce((sum, row) => sum + row.tokens, 0))} tokens)`,
        ]
      : []),
    toolLine(options.toolPrefix ?? ''),
  ];
  return { role: 'user', parts: [{ type: 'text', text: lines.join('\n') }] };
}

/**
 * The ledger message in at most `maxTokens` tokens: fewer object lines (the largest kept) until
 * it fits, down to the header and the tool line alone.
 */
export function renderLedgerMessageWithin(
  ledger: Ledger,
  state: ViewState,
  window: number,
  maxTokens: number,
  options: LedgerMessageOptions = {},
): Message {
  const counter = ledger.options.tokenCounter;
  let maxObjects = options.maxObjects ?? 40;
  for (;;) {
    const message = renderLedgerMessage(ledger, state, window, { ...options, maxObjects });
    if (maxObjects === 0 || countMessageTokens(counter, message) <= maxTokens) return message;
    maxObjects = Math.floor(maxObjects / 2);
  }
}
