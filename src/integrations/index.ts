/**
 * Integrations: Self-GC inside the clients agents already use — a Vercel AI SDK middleware and
 * thin wrappers for the official OpenAI and Anthropic SDK clients. They import SDK types only.
 */
export { type AgentTools, type AgentToolsOptions, createAgentTools } from './agent-tools.js';
export { createSelfGcMiddleware, type SelfGcMiddlewareOptions } from './ai-sdk-middleware.js';
export {
  type AnthropicMessagesClient,
  type AnthropicRequest,
  type GovernAnthropicOptions,
  governAnthropic,
} from './anthropic-client.js';
export type { GovernEvent, GovernOptions } from './govern-request.js';
export {
  type GovernOpenAIOptions,
  governOpenAI,
  type OpenAIChatClient,
  type OpenAIRequest,
} from './openai-client.js';
export { UngovernedCallError } from './ungoverned-call-error.js';
