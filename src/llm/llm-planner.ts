/**
 * The LLM side-channel planner: the planner contract through a model. It sends a ledger view
 * (never the transcript) with the object-operation contract, reads a strict JSON answer, and
 * drops what is plainly invalid before the harness sees it. The answer is untrusted all the
 * same: the harness validates every operation again. On any failure — the endpoint, a timeout,
 * an answer that is not the format — it returns the fallback planner's plan, with a warning.
 */
import { z } from 'zod';
import { protectionOf } from '../core/gc-tools/ledger-rows.js';
import type { PlannedOperation } from '../core/operations.js';
import { createEmbeddedPlanner } from '../core/planners/embedded-planner.js';
import type { Planner, PlannerInput, PlanResult } from '../core/planners/planner.js';
import { isMaskable, objectText } from '../core/render-replacement.js';
import type { Warning } from '../core/transcript.js';
import { extractJson } from './extract-json.js';
import { type LlmPlannerExample, plannerSystemPrompt, renderLedgerView } from './llm-planner-prompt.js';
import type { LlmClient, LlmUsage } from './llm-types.js';

/** One operation as the model writes it. */
export const LlmPlanOperation = z.object({
  id: z.string().min(1),
  operation: z.enum(['fold', 'mask', 'prune', 'keep']),
  reason: z.string(),
  summary: z.string().nullish(),
});
export type LlmPlanOperation = z.infer<typeof LlmPlanOperation>;

/** The whole answer: `{"operations":[…]}`. */
export const LlmPlanAnswer = z.object({ operations: z.array(LlmPlanOperation).max(2000) });
export type LlmPlanAnswer = z.infer<typeof LlmPlanAnswer>;

export interface LlmPlannerOptions {
  client: LlmClient;
  /** Used whenever the model fails or answers badly. Default: the embedded planner. */
  fallback?: Planner;
  /** Unprotected objects listed in the ledger view, the largest first (default 120). */
  maxObjects?: number;
  /** Worked examples in the system prompt (default `DEFAULT_PLANNER_EXAMPLES`; `[]` for none). */
  examples?: readonly LlmPlannerExample[];
  /** Output token limit of the planner's answer (default 2000). */
  maxOutputTokens?: number;
}

type Cost = NonNullable<PlanResult['cost']>;

function costOf(usage: LlmUsage): Cost {
  return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens };
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
      (object.kind !== 'function' || !isMaskable(objectText(input.ledger, object)))
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
      const summary = operation === 'fold' && entry.summary?.trim() ? entry.summary.trim() : undefined;
      accepted.push({ objectId: entry.id, operation, reason, ...(summary ? { summary } : {}) });
    }
  }
  return { accepted, dropped };
}

export function createLlmPlanner(options: LlmPlannerOptions): Planner {
  const fallback = options.fallback ?? createEmbeddedPlanner();
  const system = plannerSystemPrompt(options.examples);

  async function fallBack(input: PlannerInput, why: string, cost: Cost | undefined): Promise<PlanResult> {
    const result = await fallback.plan(input);
    const warning: Warning = {
      code: 'llm-planner-fallback',
      message: `llm planner (${options.client.provider} ${options.client.model}) failed: ${why}; used the ${fallback.name} planner`,
    };
    const spent =
      cost && result.cost
        ? {
            inputTokens: cost.inputTokens + result.cost.inputTokens,
            outputTokens: cost.outputTokens + result.cost.outputTokens,
          }
        : (cost ?? result.cost);
    return {
      plan: result.plan,
      ...(spent ? { cost: spent } : {}),
      warnings: [warning, ...(result.warnings ?? [])],
    };
  }

  return {
    name: 'llm',
    async plan(input) {
      const view = renderLedgerView(
        input,
        options.maxObjects === undefined ? {} : { maxObjects: options.maxObjects },
      );
      let answer: { text: string; usage: LlmUsage };
      try {
        answer = await options.client.complete({
          system,
          messages: [{ role: 'user', content: view }],
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
