/**
 * The LLM judge's side of a scripted upstream, for tests: which of its prompts a request is
 * (the scorecard, a next step to write, an A/B comparison), and scorecard answers.
 */
import type { ScriptedRequest } from '../../testing/scripted-reply.js';
import { JUDGE_DIMENSIONS, type JudgeDimension } from '../judge-llm.js';
import { NEXT_STEP_SYSTEM_PROMPT, PAIRWISE_SYSTEM_PROMPT } from '../judge-pairwise.js';

/** The scorecard prompt (its rubric's steps). */
export const isScorecardRequest = (request: ScriptedRequest) => request.rawBody.includes('Evaluation steps:');
/** A request to write the agent's next step. */
export const isNextStepRequest = (request: ScriptedRequest) =>
  request.rawBody.includes(JSON.stringify(NEXT_STEP_SYSTEM_PROMPT).slice(1, 40));
/** An A/B comparison. */
export const isPairRequest = (request: ScriptedRequest) =>
  request.rawBody.includes(JSON.stringify(PAIRWISE_SYSTEM_PROMPT).slice(1, 40));

/** The user text of a request (both wire formats send it as a string). */
export function userText(request: ScriptedRequest): string {
  const body = request.body as { messages: Array<{ role: string; content: string }> };
  return body.messages
    .filter((message) => message.role === 'user')
    .map((message) => message.content)
    .join('\n');
}

/** The transcript of a next-step request holds the view's fold markers when it is the governed one. */
export const isGovernedStepRequest = (request: ScriptedRequest) =>
  isNextStepRequest(request) && /\[(folded|pruned|masked)\b/.test(userText(request));

/** A scorecard answer: every dimension at `score` unless `scores` says otherwise. */
export function scorecardAnswer(
  score: number,
  extra: {
    scores?: Partial<Record<JudgeDimension, number>>;
    culprit?: string | string[];
    category?: string;
    missing?: string[];
  } = {},
): Record<string, unknown> {
  return {
    scores: Object.fromEntries(
      JUDGE_DIMENSIONS.map((dimension) => [
        dimension,
        { score: extra.scores?.[dimension] ?? score, reason: `scripted ${dimension}` },
      ]),
    ),
    failure_culprit: extra.culprit ?? 'none',
    failure_category: extra.category ?? 'none',
    missing: extra.missing ?? [],
    reason: 'scripted',
  };
}
