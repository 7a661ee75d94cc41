/**
 * The LLM side-channel planner: the planner contract through a model. In `fork` mode it sends
 * the agent's own view with the planner instruction appended (the paper's side channel: the
 * model sees everything, and the prefix is a prompt-cache read); in `ledger` mode a compact
 * ledger view under a system prompt. Either way it reads a strict JSON answer and drops what is
 * plainly invalid before the harness sees it. The answer is untrusted all the same: the harness
 * validates every operation again. On any failure — the endpoint, a timeout, an answer that is
 * not the format — it returns the fallback planner's plan, with a warning.
 */
import { z } from 'zod';
import { protectionOf } from '../core/gc-tools/ledger-rows.js';
import { isToolOutput } from '../core/ledger.js';
import type { PlannedOperation } from '../core/operations.js';
import { createEmbeddedPlanner } from '../core/planners/embedded-planner.js';
import {
  addPlannerCosts,
  type Planner,
  type PlannerCost,
  type PlannerInput,
  type PlanResult,
} from '../core/planners/planner.js';
import { projectView } from '../core/project-view.js';
import { isMaskable, objectText } from '../core/render-replacement.js';
import type { Warning } from '../core/transcript.js';
import { extractJson } from './extract-json.js';
import { renderForkInstruction } from './fork-planner-prompt.js';
import { writeFork } from './fork-request.js';
import { type LlmPlannerExample, plannerSystemPrompt, renderLedgerView } from './llm-planner-prompt.js';
import type { LlmClient, LlmRequest, LlmUsage } from './llm-types.js';

/** One operation as the model writes it. */
export const LlmPlanOperation = z.object({
  id: z.string().min(1),
  operation: z.enum(['fold', 'mask', 'prune', 'keep']),
  reason: z.string(),
  summary: z.string().nullish(),
  /**
   * For the fold of a request (`conversation:user:K`): what the user asked and what came of it
   * (the paper's field). It goes into the fold's summary line, before `summary`.
   */
  above_conversation_summary: z.string().nullish(),
});
export type LlmPlanOperation = z.infer<typeof LlmPlanOperation>;

/** The whole answer: `{"operations":[…]}`. */
export const LlmPlanAnswer = z.object({ operations: z.array(LlmPlanOperation).max(2000) });
export type LlmPlanAnswer = z.infer<typeof LlmPlanAnswer>;

export type LlmPlannerMode = 'fork' | 'ledger';

export interface LlmPlannerOptions {
  client: LlmClient;
  /**
   * `fork` (default): the agent's own view, written as the agent's request carries it, with the
   * planner instruction appended as a last user message; the model reads every payload, and
   * when the planner's endpoint and model are the agent's the view is a prompt-cache read.
   * `ledger`: a compact ledger view (ids, sizes, short heads) under a system prompt with worked
   * examples; blind to content, but short, for small models and small windows.
   */
  mode?: LlmPlannerMode;
  /** Used whenever the model fails or answers badly. Default: the embedded planner. */
  fallback?: Planner;
  /** Unprotected objects listed, the largest first (default 120 in ledger mode, 300 in fork mode). */
  maxObjects?: number;
  /** Ledger mode: worked examples in the system prompt (default `DEFAULT_PLANNER_EXAMPLES`; `[]` for none). */
  examples?: readonly LlmPlannerExample[];
  /** Output token limit of the planner's answer (default 2000). */
  maxOutputTokens?: number;
  /**
   * Fork mode: the agent's tool definitions in the planner provider's wire format. They are the
   * first part of the prefix a provider caches, so the fork reads the agent's cache only with
   * them; without them it shares its cache with earlier forks (see `writeFork`).
   */
  tools?: readonly unknown[];
}

/** What one mode sends, besides the settings every call shares. */
type PlannerCall = Pick<LlmRequest, 'system' | 'messages' | 'fork'>;

/** The call's usage as the commit rule prices it: cache reads and writes apart from the rest. */
export function costOf(usage: LlmUsage): PlannerCost {
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedInputTokens: usage.cachedInputTokens,
    cacheWriteInputTokens: usage.cacheWriteInputTokens,
  };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Parse and validate an answer; throws with a readable message when it is not the format. */
export function readPlanAnswer(text: string): LlmPlanAnswer {
  const parsed = LlmPlanAnswer.safeParse(extractJson(text));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(
    `answer is not the plan format (${issue ? `${issue.path.join('.') || 'answer'}: ${issue.message}` : 'invalid'})`,
  );
}

/**
 * The model's operations as planned operations, without those the harness would refuse anyway
 * (unknown ids, protected objects) or that change nothing (keep, a repeat, the current state).
 */
export function screenOperations(input: PlannerInput, operations: readonly LlmPlanOperation[]) {
  const accepted: PlannedOperation[] = [];
  const dropped: string[] = [];
  const seen = new Set<string>();
  for (const entry of operations) {
    if (entry.operation === 'keep') continue;
    const object = input.ledger.get(entry.id);
    const protection = object ? protectionOf(object, input.protectFrom) : undefined;
    let operation: 'fold' | 'mask' | 'prune' = entry.operation;
    let reason = entry.reason.trim() || `${operation} proposed by the llm planner`;
    // A mask where masking is refused (short output, trace, diff, table) becomes a fold.
    if (
      operation === 'mask' &&
      object &&
      (!isToolOutput(object) || !isMaskable(objectText(input.ledger, object)))
    ) {
      operation = 'fold';
      reason = `${reason} (not maskable, folded instead)`;
    }
    const current = input.state[entry.id]?.operation;
    if (!object) dropped.push(`${entry.id} (unknown id)`);
    else if (protection) dropped.push(`${entry.id} (${protection})`);
    else if (seen.has(entry.id)) dropped.push(`${entry.id} (listed twice)`);
    else if (current === 'prune' || current === operation || (current === 'fold' && operation === 'mask')) {
      dropped.push(`${entry.id} (already ${current})`);
    } else {
      seen.add(entry.id);
      const summary = operation === 'fold' ? foldSummary(entry, object) : undefined;
      accepted.push({ objectId: entry.id, operation, reason, ...(summary ? { summary } : {}) });
    }
  }
  return { accepted, dropped };
}

/** A fold's summary line: for a request, what it came to first, then the anchors. */
function foldSummary(entry: LlmPlanOperation, object: { kind: string }): string | undefined {
  const parts =
    object.kind === 'conversation' ? [entry.above_conversation_summary, entry.summary] : [entry.summary];
  const text = parts
    .map((part) => part?.trim())
    .filter((part) => part)
    .join(' ');
  return text === '' ? undefined : text;
}

export function createLlmPlanner(options: LlmPlannerOptions): Planner {
  const fallback = options.fallback ?? createEmbeddedPlanner();
  const mode = options.mode ?? 'fork';
  const system = plannerSystemPrompt(options.examples);
  const maxObjects = options.maxObjects === undefined ? {} : { maxObjects: options.maxObjects };

  /** The agent's view as its request carries it, then the instruction: nothing before it differs. */
  function forkCall(input: PlannerInput): PlannerCall {
    const view = projectView(input.ledger, input.state, { showIds: input.showIds === true });
    const fork = writeFork(
      options.client.provider,
      view.items.map((item) => item.message),
      options.tools,
      input.ledger.messages,
    );
    const instruction = renderForkInstruction(input, view.items, maxObjects);
    return { fork, messages: [{ role: 'user', content: instruction }] };
  }

  function ledgerCall(input: PlannerInput): PlannerCall {
    return { system, messages: [{ role: 'user', content: renderLedgerView(input, maxObjects) }] };
  }

  async function fallBack(
    input: PlannerInput,
    why: string,
    cost: PlannerCost | undefined,
  ): Promise<PlanResult> {
    const result = await fallback.plan(input);
    const warning: Warning = {
      code: 'llm-planner-fallback',
      message: `llm planner (${options.client.provider} ${options.client.model}) failed: ${why}; used the ${fallback.name} planner`,
    };
    const spent = cost && result.cost ? addPlannerCosts(cost, result.cost) : (cost ?? result.cost);
    return {
      plan: result.plan,
      ...(spent ? { cost: spent } : {}),
      warnings: [warning, ...(result.warnings ?? [])],
    };
  }

  return {
    name: 'llm',
    async plan(input) {
      const call = mode === 'fork' ? forkCall(input) : ledgerCall(input);
      let answer: { text: string; usage: LlmUsage };
      try {
        answer = await options.client.complete({
          ...call,
          json: true,
          temperature: 0,
          maxTokens: options.maxOutputTokens ?? 2000,
          ...(input.signal ? { signal: input.signal } : {}),
        });
      } catch (error) {
        return fallBack(input, errorMessage(error), undefined);
      }
      const cost = costOf(answer.usage);
      let parsed: LlmPlanAnswer;
      try {
        parsed = readPlanAnswer(answer.text);
      } catch (error) {
        return fallBack(input, errorMessage(error), cost);
      }
      const { accepted, dropped } = screenOperations(input, parsed.operations);
      const warnings: Warning[] =
        dropped.length > 0
          ? [
              {
                code: 'llm-plan-dropped',
                message: `dropped ${dropped.length} operation(s) no planner may make: ${dropped.join(', ')}`,
              },
            ]
          : [];
      return { plan: { planner: 'llm', operations: accepted }, cost, warnings };
    },
  };
}
