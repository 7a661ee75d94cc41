/** A minimal LLM client (OpenAI-compatible Chat Completions, Anthropic Messages) and JSON extraction. */

export {
  ANTHROPIC_DEFAULT_MAX_TOKENS,
  ANTHROPIC_JSON_INSTRUCTION,
  ANTHROPIC_VERSION,
} from './anthropic-client.js';
export { extractJson } from './extract-json.js';
export { askHints, createHintedPlanner, type HintedPlannerOptions } from './hint-planner.js';
export { createLlmClient } from './llm-client.js';
export { createLlmPlanner, type LlmPlannerMode, type LlmPlannerOptions } from './llm-planner.js';
export type {
  LlmClient,
  LlmClientOptions,
  LlmFork,
  LlmMessage,
  LlmProvider,
  LlmRequest,
  LlmResponse,
  LlmUsage,
} from './llm-types.js';
