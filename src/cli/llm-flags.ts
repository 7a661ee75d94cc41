/**
 * The LLM endpoint flags of `selfgc eval` and `selfgc replay`, and the judge flags of `eval`.
 * The API key is never a flag, so it never lands in shell history: `--llm-key-env` names the
 * environment variable that holds it, and whoever makes the client reads it there.
 */
import type { ParseArgsConfig } from 'node:util';
import { BadInputError } from '../core/errors.js';
import { DEFAULT_KEY_ENV, type Environment, type LlmEndpoint } from '../eval/llm-endpoint.js';
import type { LlmPlannerMode } from '../llm/llm-planner.js';
import type { LlmProvider } from '../llm/llm-types.js';

export const LLM_FLAGS = {
  'llm-url': { type: 'string' },
  'llm-provider': { type: 'string' },
  'llm-model': { type: 'string' },
  'llm-key-env': { type: 'string' },
  'planner-mode': { type: 'string' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export const JUDGE_FLAGS = {
  judge: { type: 'string' },
  'judge-sample': { type: 'string' },
  'judge-pairs': { type: 'string' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export const LLM_FLAGS_HELP = `LLM endpoint (optional; makes the selfgc-llm strategy available):
  --llm-url URL          OpenAI-compatible base URL with its version (http://localhost:11434/v1)
                         or an Anthropic base URL (https://api.anthropic.com)
  --llm-provider P       openai (default: any OpenAI-compatible server) or anthropic
  --llm-model NAME       the model to ask (required with --llm-url)
  --llm-key-env NAME     environment variable holding the API key (default OPENAI_API_KEY or
                         ANTHROPIC_API_KEY; unset means no key, as local servers need)
  --planner-mode M       how selfgc-llm's planner reads a session: fork (default: the agent's own
                         view with the planner instruction after it, a prompt-cache read) or
                         ledger (ids, sizes and short heads: a short prompt for small models)
`;

export const DEFAULT_JUDGE_SAMPLE = 50;
/** Of the judged cuts, those per strategy that also get the A/B calibration (three calls each, one more per cut). */
export const DEFAULT_JUDGE_PAIRS = 10;

type FlagValues = Record<string, string | boolean | undefined>;

const PROVIDERS: readonly LlmProvider[] = ['openai', 'anthropic'];
const PLANNER_MODES: readonly LlmPlannerMode[] = ['fork', 'ledger'];

function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** The endpoint the flags describe, or undefined without `--llm-url`. `env` checks a named key variable. */
export function readLlmEndpoint(values: FlagValues, env: Environment | undefined): LlmEndpoint | undefined {
  const url = stringFlag(values, 'llm-url');
  const provider = stringFlag(values, 'llm-provider') ?? 'openai';
  const model = stringFlag(values, 'llm-model');
  const keyEnv = stringFlag(values, 'llm-key-env');
  const plannerMode = stringFlag(values, 'planner-mode');
  if (!PROVIDERS.includes(provider as LlmProvider))
    throw new BadInputError(`--llm-provider must be openai or anthropic, got "${provider}"`);
  if (plannerMode !== undefined && !PLANNER_MODES.includes(plannerMode as LlmPlannerMode))
    throw new BadInputError(`--planner-mode must be fork or ledger, got "${plannerMode}"`);
  if (url === undefined) {
    const stray = ['llm-provider', 'llm-model', 'llm-key-env', 'planner-mode'].find(
      (name) => values[name] !== undefined,
    );
    if (stray) throw new BadInputError(`--${stray} needs --llm-url URL`);
    return undefined;
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:')
    throw new BadInputError(`--llm-url must be an http(s) URL, got "${url}"`);
  if (model === undefined || model.trim() === '')
    throw new BadInputError('--llm-url needs --llm-model NAME (the model the endpoint serves)');
  if (keyEnv !== undefined && env !== undefined && !env[keyEnv])
    throw new BadInputError(`--llm-key-env names ${keyEnv}, which is not set in the environment`);
  return {
    provider: provider as LlmProvider,
    baseUrl: url,
    model,
    keyEnv: keyEnv ?? DEFAULT_KEY_ENV[provider as LlmProvider],
    ...(plannerMode ? { plannerMode: plannerMode as LlmPlannerMode } : {}),
  };
}

function countFlag(value: string, name: string, least: number): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < least)
    throw new BadInputError(
      `--${name} must be a ${least === 0 ? 'non-negative' : 'positive'} integer, got "${value}"`,
    );
  return count;
}

/**
 * With `--judge llm`: cuts per strategy the LLM judge scores, and of those the cuts of its A/B
 * calibration; else undefined (the anchor judge alone).
 */
export function readJudgeFlags(
  values: FlagValues,
  endpoint: LlmEndpoint | undefined,
  modes: readonly string[],
): { sample: number; pairs: number } | undefined {
  const judge = stringFlag(values, 'judge') ?? 'anchors';
  const sample = stringFlag(values, 'judge-sample');
  const pairs = stringFlag(values, 'judge-pairs');
  if (judge !== 'anchors' && judge !== 'llm')
    throw new BadInputError(`--judge must be anchors or llm, got "${judge}"`);
  if (judge === 'anchors') {
    if (sample !== undefined) throw new BadInputError('--judge-sample needs --judge llm');
    if (pairs !== undefined) throw new BadInputError('--judge-pairs needs --judge llm');
    return undefined;
  }
  if (!endpoint) throw new BadInputError('--judge llm needs --llm-url URL and --llm-model NAME');
  if (!modes.includes('cut')) throw new BadInputError('--judge llm judges cut mode: add cut to --modes');
  const count = sample === undefined ? DEFAULT_JUDGE_SAMPLE : countFlag(sample, 'judge-sample', 1);
  const paired =
    pairs === undefined ? Math.min(DEFAULT_JUDGE_PAIRS, count) : countFlag(pairs, 'judge-pairs', 0);
  if (paired > count)
    throw new BadInputError(`--judge-pairs ${paired} is more than the ${count} judged cuts (--judge-sample)`);
  return { sample: count, pairs: paired };
}
