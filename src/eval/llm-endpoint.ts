/**
 * The LLM endpoint of an evaluation (`--llm-url` and friends) as plain data, which crosses into
 * worker threads, and the client each thread makes from it. The API key never travels with the
 * settings: whoever makes the client reads it from the environment variable they name.
 */
import { UpstreamError } from '../core/errors.js';
import { createLlmClient } from '../llm/llm-client.js';
import type { LlmPlannerMode } from '../llm/llm-planner.js';
import type { LlmClient, LlmProvider } from '../llm/llm-types.js';

export interface LlmEndpoint {
  provider: LlmProvider;
  /** OpenAI-compatible: the base URL with its version (`http://localhost:11434/v1`); Anthropic: the origin. */
  baseUrl: string;
  model: string;
  /** The environment variable that holds the API key; unset means no key, as local servers need. */
  keyEnv: string;
  /** How selfgc-llm's planner reads a session (`--planner-mode`): default `fork`. */
  plannerMode?: LlmPlannerMode;
}

export const DEFAULT_KEY_ENV: Readonly<Record<LlmProvider, string>> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
};

/** Failed calls in a row after which an evaluation stops asking the endpoint. */
export const ENDPOINT_FAILURE_LIMIT = 3;

export type Environment = Readonly<Record<string, string | undefined>>;

/** The client of an endpoint, its key read from `env`, behind a breaker (`withFailureLimit`). */
export function createEndpointClient(endpoint: LlmEndpoint, env: Environment): LlmClient {
  const apiKey = env[endpoint.keyEnv];
  const client = createLlmClient({
    provider: endpoint.provider,
    baseUrl: endpoint.baseUrl,
    model: endpoint.model,
    ...(apiKey ? { apiKey } : {}),
  });
  return withFailureLimit(client, ENDPOINT_FAILURE_LIMIT);
}

/** What the strategies that ask a model take from an endpoint: its client, and how selfgc-llm plans. */
export function endpointContext(
  endpoint: LlmEndpoint | undefined,
  env: Environment,
): { llmClient?: LlmClient; plannerMode?: LlmPlannerMode } {
  if (!endpoint) return {};
  return {
    llmClient: createEndpointClient(endpoint, env),
    ...(endpoint.plannerMode ? { plannerMode: endpoint.plannerMode } : {}),
  };
}

/**
 * A client that fails at once, for the rest of its life, after `limit` failed calls in a row:
 * an evaluation asks once per cut, and a dead endpoint should cost a few calls (each with its
 * retries), not hours of them. Callers fall back as for any failure.
 */
export function withFailureLimit(client: LlmClient, limit: number): LlmClient {
  let failures = 0;
  let last = '';
  return {
    provider: client.provider,
    model: client.model,
    async complete(request) {
      if (failures >= limit) {
        throw new UpstreamError(
          `${client.provider} endpoint not asked: its last ${limit} calls failed (last: ${last})`,
        );
      }
      try {
        const response = await client.complete(request);
        failures = 0;
        return response;
      } catch (error) {
        failures += 1;
        last = error instanceof Error ? error.message : String(error);
        throw error;
      }
    },
  };
}
