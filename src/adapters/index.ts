/**
 * Provider adapters: pure conversions between each provider's wire messages and the canonical
 * transcript (`core/transcript.ts`), each returning `{ messages, warnings }`. Every `from*`
 * validates its input first and throws a BadInputError naming the message index; every `to*`
 * is lossless for transcripts its own `from*` produced, and says out loud (a warning) whatever
 * it cannot carry. Provider-specific details ride in `providerData.<namespace>` on messages
 * and parts: `openaiChat`, `openaiResponses`, `anthropic`, `aiSdk`.
 */
export {
  AssistantModelMessage,
  ModelDataContent,
  ModelFilePart,
  ModelImagePart,
  ModelMessage,
  ModelProviderOptions,
  ModelReasoningPart,
  ModelTextPart,
  type ModelToolApprovalRequest,
  type ModelToolApprovalResponse,
  ModelToolCallPart,
  ModelToolResultContentItem,
  ModelToolResultOutput,
  ModelToolResultPart,
  SystemModelMessage,
  ToolModelMessage,
  UserModelMessage,
} from './ai-sdk/ai-sdk-api.js';
export { fromModelMessages } from './ai-sdk/convert-from-model-messages.js';
export { toModelMessages } from './ai-sdk/convert-to-model-messages.js';
export {
  AnthropicAssistantBlock,
  AnthropicAssistantMessage,
  AnthropicCacheControl,
  AnthropicImageBlock,
  AnthropicImageSource,
  AnthropicMessage,
  type AnthropicMessagesPrompt,
  AnthropicRedactedThinkingBlock,
  AnthropicSystem,
  AnthropicTextBlock,
  AnthropicThinkingBlock,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
  AnthropicUserBlock,
  AnthropicUserMessage,
} from './anthropic/anthropic-api.js';
export { fromAnthropicMessages } from './anthropic/convert-from-anthropic-messages.js';
export { toAnthropicMessages } from './anthropic/convert-to-anthropic-messages.js';
export {
  countBreakpoints,
  type LimitedBreakpoints,
  limitCacheBreakpoints,
  MAX_CACHE_BREAKPOINTS,
  requestBreakpoints,
} from './anthropic/limit-cache-breakpoints.js';
export { keepLoadedTools } from './anthropic/loaded-tools.js';
export { bindsThinking, THINKING_BINDING_BETA } from './anthropic/thinking-binding.js';
export { normalizeTranscript } from './normalize-transcript.js';
export { fromOpenAIChat } from './openai-chat/convert-from-openai-chat.js';
export { toOpenAIChat } from './openai-chat/convert-to-openai-chat.js';
export {
  OpenAIChatAssistantMessage,
  OpenAIChatCustomToolCall,
  OpenAIChatDeveloperMessage,
  OpenAIChatFunctionToolCall,
  OpenAIChatImagePart,
  OpenAIChatMessage,
  OpenAIChatRefusalPart,
  OpenAIChatSystemMessage,
  OpenAIChatTextPart,
  OpenAIChatToolCall,
  OpenAIChatToolMessage,
  OpenAIChatUserMessage,
} from './openai-chat/openai-chat-api.js';
export { fromOpenAIResponses } from './openai-responses/convert-from-openai-responses.js';
export { toOpenAIResponses } from './openai-responses/convert-to-openai-responses.js';
export {
  ResponseFunctionCallItem,
  ResponseFunctionCallOutputItem,
  ResponseInputImage,
  type ResponseInputItem,
  ResponseInputText,
  ResponseMessageContentPart,
  ResponseMessageItem,
  ResponseOutputRefusal,
  ResponseOutputText,
  ResponseReasoningItem,
} from './openai-responses/openai-responses-api.js';
export {
  parseSessionLine,
  parseSessionsJsonl,
  type RecordedSessionLine,
  type SessionMeta,
} from './sessions-jsonl.js';
