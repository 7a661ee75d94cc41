/**
 * Cut mode (Hard-Set style): at cut points right before an assistant message, run each
 * strategy on the prefix and judge the view against the real continuation. The ledger grows
 * cut by cut, so at every cut the strategies see the prefix and nothing after it.
 */
import { createLedger, type Ledger } from '../core/ledger.js';
import type { TokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import { messageText } from '../core/transcript.js';
import type { PlanAuditOutcome } from './aggregate-judge.js';
import type { AnchorVerdict } from './judges/anchor-judge.js';
import { createAnchorLocator, judgeAnchors, neededAnchors } from './judges/anchor-judge.js';
import {
  createTokenIndex,
  judgeRareTokens,
  neededRareTokens,
  type RareTokenVerdict,
} from './judges/rare-token-judge.js';
import { planAuditOf } from './latest-turn-audit.js';
import { recoverableMap } from './recoverable-map.js';
import type { Strategy, StrategyOutput } from './strategies/strategy.js';

/** One strategy's view at one cut, with the verdicts of both judges. */
export interface CutRecord {
  session: string;
  cut: number;
  strategy: string;
  keep: number | 'auto';
  prefixTokens: number;
  viewTokens: number;
  output: StrategyOutput;
  recoverable: Record<string, number[]>;
  verdict: AnchorVerdict;
  rareTokens: RareTokenVerdict;
  /** The object ids of each prefix message (shared by every record of the cut), for the LLM judge. */
  objectIds: ReadonlyArray<readonly string[]>;
  /** For strategies that plan through the harness: the latest-turn audit of the plan. */
  latestTurn?: PlanAuditOutcome;
}

/**
 * The ids of the objects each message belongs to: its own (a request, tool results, a system
 * prompt), or for an assistant message the request whose work it is.
 */
export function objectIdsByMessage(ledger: Ledger): string[][] {
  return ledger.messages.map((_, index) => {
    const own = (ledger.objectsByMessage.get(index) ?? []).map((object) => object.id);
    const conversation = ledger.conversationAt(index);
    return own.length > 0 || !conversation ? own : [conversation.id];
  });
}

/** Assistant messages the judge reads after a cut. */
export const CONTINUATION_STEPS = 3;

/**
 * Automatic cut points: up to `count` indexes of assistant messages spread over the second
 * half of the session, each with at least one assistant message to judge.
 */
export function autoCuts(messages: readonly Message[], count = 4): number[] {
  const assistants = messages.flatMap((message, index) =>
    message.role === 'assistant' && index > 1 ? [index] : [],
  );
  const eligible = assistants.filter((index) => index >= messages.length / 2 || assistants.length < 4);
  if (eligible.length === 0) return [];
  if (eligible.length <= count) return eligible;
  const step = eligible.length / count;
  return Array.from({ length: count }, (_, slot) => eligible[Math.floor(slot * step + step / 2)]!);
}

/** The next `CONTINUATION_STEPS` assistant messages from `cut` on. */
export function continuationAt(messages: readonly Message[], cut: number): Message[] {
  const continuation: Message[] = [];
  for (let index = cut; index < messages.length && continuation.length < CONTINUATION_STEPS; index += 1) {
    if (messages[index]!.role === 'assistant') continuation.push(messages[index]!);
  }
  return continuation;
}

export interface CutReplayOptions {
  sessionId: string;
  messages: readonly Message[];
  cuts: readonly number[];
  strategies: readonly Strategy[];
  /** Keep shares to run: `auto` (each strategy's own) and the sweep. */
  keeps: ReadonlyArray<number | 'auto'>;
  tokenCounter: TokenCounter;
}

/** The cuts replay uses, in order: each once, within the session, with a continuation to judge. */
export function replayableCuts(messages: readonly Message[], cuts: readonly number[]): number[] {
  return [...new Set(cuts)]
    .filter((cut) => cut > 0 && cut <= messages.length && continuationAt(messages, cut).length > 0)
    .sort((a, b) => a - b);
}

/** Replay one session in cut mode. Strategies run one after another, awaited: some ask a model. */
export async function replayCuts(options: CutReplayOptions): Promise<CutRecord[]> {
  const ledger = createLedger({ tokenCounter: options.tokenCounter });
  const prefixTexts: string[] = [];
  const locator = createAnchorLocator(prefixTexts);
  const tokenIndex = createTokenIndex();
  const records: CutRecord[] = [];
  for (const cut of replayableCuts(options.messages, options.cuts)) {
    const appended = options.messages.slice(ledger.messages.length, cut);
    ledger.append(appended);
    for (const message of appended) prefixTexts.push(messageText(message));
    tokenIndex.append(appended);
    const continuation = continuationAt(options.messages, cut);
    const needed = neededAnchors(prefixTexts, continuation, locator);
    const neededRare = neededRareTokens(tokenIndex, continuation);
    const objectIds = objectIdsByMessage(ledger);
    for (const strategy of options.strategies) {
      for (const keep of options.keeps) {
        const output = await strategy.run({ ledger, keep, ...(strategy.upperBound ? { continuation } : {}) });
        const verdict = judgeAnchors({
          ledger,
          prefixTexts,
          items: output.items,
          continuation,
          needed,
          ...(output.state ? { state: output.state } : {}),
        });
        const latestTurn = planAuditOf(ledger, output);
        records.push({
          session: options.sessionId,
          cut,
          strategy: strategy.name,
          keep,
          prefixTokens: ledger.totalTokens,
          viewTokens: output.tokens,
          output,
          recoverable: recoverableMap(ledger, output.state),
          verdict,
          rareTokens: judgeRareTokens({
            index: tokenIndex,
            items: output.items,
            continuation,
            needed: neededRare,
          }),
          objectIds,
          ...(latestTurn ? { latestTurn } : {}),
        });
      }
    }
  }
  return records;
}
