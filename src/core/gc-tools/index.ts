/** The agent's GC tools: definitions per provider, the handler, and the per-turn ledger message. */
export {
  type AiSdkFunctionTool,
  type AnthropicTool,
  ExpandArguments,
  FoldArguments,
  GC_TOOL_ARGUMENTS,
  type GcToolName,
  type GcToolSpec,
  gcToolSpecs,
  gcToolsForAiSdk,
  gcToolsForAnthropic,
  gcToolsForOpenAIChat,
  gcToolsForOpenAIResponses,
  isGcToolName,
  type JsonSchema,
  type OpenAIChatFunctionTool,
  type OpenAIResponsesFunctionTool,
  PruneArguments,
  SearchContextArguments,
} from './gc-tool-definitions.js';
export {
  createGcToolHandler,
  type GcToolCall,
  type GcToolDependencies,
  type GcToolHandler,
} from './gc-tool-handler.js';
export { type LedgerRow, type LedgerRowOptions, ledgerRows, protectionOf } from './ledger-rows.js';
export { budgetUsedPct, type LedgerMessageOptions, renderLedgerMessage } from './render-ledger-message.js';
