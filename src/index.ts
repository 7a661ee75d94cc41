/**
 * Self-GC: self-governing context for long-running LLM agents.
 *
 * The main entry holds the core — the canonical transcript, the ledger, operations, projection,
 * rehearsal, commit, the governor and its planners, the agent's GC tools — and the real
 * tokenizers, whose tables load on a counter's first count (or `loadTokenCounter`), never at
 * import. Each entry lists its exports by name. Edges have their own entries:
 * `self-gc/adapters`, `self-gc/stores` (memory and by URL), `self-gc/stores/sqlite`,
 * `self-gc/stores/redis`, `self-gc/stores/postgres`, `self-gc/llm`, `self-gc/integrations`,
 * `self-gc/proxy`, `self-gc/eval`.
 */
export { type Anchor, type AnchorKind, anchorValues, extractAnchors } from './core/anchors.js';
export {
  type CommitContext,
  type CommitOutcome,
  commitIdFor,
  commitRehearsal,
  undoCommit,
} from './core/commit-plan.js';
export {
  BadInputError,
  ERROR_TABLE,
  type ErrorCode,
  NotFoundError,
  parseJson,
  SelfGcError,
  StoreError,
  toSelfGcError,
  UpstreamError,
} from './core/errors.js';
export {
  type AiSdkFunctionTool,
  type AnthropicTool,
  budgetUsedPct,
  createGcToolHandler,
  ExpandArguments,
  FoldArguments,
  GC_TOOL_ARGUMENTS,
  type GcToolCall,
  type GcToolDependencies,
  type GcToolHandler,
  type GcToolName,
  type GcToolSpec,
  gcToolSpecs,
  gcToolsForAiSdk,
  gcToolsForAnthropic,
  gcToolsForOpenAIChat,
  gcToolsForOpenAIResponses,
  isGcToolName,
  type JsonSchema,
  type LedgerMessageOptions,
  type LedgerRow,
  type LedgerRowOptions,
  ledgerRows,
  type OpenAIChatFunctionTool,
  type OpenAIResponsesFunctionTool,
  PruneArguments,
  protectionOf,
  renderLedgerMessage,
  SearchContextArguments,
} from './core/gc-tools/index.js';
export {
  ANTHROPIC_PRICING,
  ANTHROPIC_PRICING_1H,
  type CachePricing,
  type CommitEconomics,
  DEFAULT_OUTPUT_PRICE,
  defaultPricing,
  OPENAI_PRICING,
  plannerCallCost,
  weighCommit,
} from './core/governor/cache-cost.js';
export { PAPER_COMMIT_SHARE } from './core/governor/commit-policy.js';
export { createGovernor } from './core/governor/create-governor.js';
export type {
  AgentPlanResult,
  CommitPolicy,
  GovernanceDecision,
  Governor,
  GovernorOptions,
  PinOptions,
  ProjectCallOptions,
  ProjectResult,
  RecoveryScope,
  TriggerOptions,
} from './core/governor/governor-types.js';
export { createPinRule, globToRegExp } from './core/governor/pins.js';
export { exceedsJsonDepth, MAX_JSON_DEPTH } from './core/json-depth.js';
export {
  countMessageTokens,
  createLedger,
  defaultPin,
  indexTranscript,
  type Ledger,
  type LedgerObject,
  type LedgerOptions,
  type ObjectKind,
  type PinContext,
} from './core/ledger.js';
export { type ObjectPayload, objectPayload, parseObjectPayload, payloadText } from './core/object-payload.js';
export {
  type AcceptedOperation,
  type ContentBinding,
  type FoldState,
  isSpanFold,
  type MaskState,
  type ObjectState,
  type OperationKind,
  type Plan,
  type PlannedOperation,
  type PruneState,
  type RejectedOperation,
  type RejectionReason,
  type SpanFoldState,
  supersedeOperations,
  type ViewState,
} from './core/operations.js';
export {
  createEmbeddedPlanner,
  type EmbeddedPlannerOptions,
  hintCandidates,
  type ObjectHint,
  planEmbedded,
} from './core/planners/embedded-planner.js';
export {
  addPlannerCosts,
  type Planner,
  type PlannerCost,
  type PlannerInput,
  type PlanResult,
} from './core/planners/planner.js';
export { type ProjectOptions, projectView, type View, type ViewItem } from './core/project-view.js';
export {
  type ReduceToWindowOptions,
  reduceToWindow,
  type WindowReduction,
} from './core/reduce-to-window.js';
export { type Rehearsal, type RehearseOptions, rehearsePlan } from './core/rehearse-plan.js';
export {
  type FoldOptions,
  isMaskable,
  type MaskOptions,
  objectText,
  renderFold,
  renderMask,
  renderSpanFold,
  renderTombstone,
  sidecarKey,
  spanText,
} from './core/render-replacement.js';
export {
  emptySessionState,
  type PendingPlan,
  parseSessionState,
  readSessionState,
  SESSION_STATE_VERSION,
  type SessionState,
  type TriggerBookkeeping,
} from './core/session-state.js';
export {
  type CommitRecord,
  type CommittedOperation,
  type RemovingOperation,
  type SearchHit,
  type SessionSnapshot,
  SIDECAR_STORE_OPERATIONS,
  type SidecarRecord,
  type SidecarStore,
  type SidecarStoreOperation,
  STORE_SCHEMA_VERSION,
  type WriteCommitResult,
  type WriteStateResult,
} from './core/store.js';
export {
  approximateTokenCounter,
  MESSAGE_OVERHEAD_TOKENS,
  memoizeTokenCounter,
  type TokenCounter,
} from './core/tokens.js';
export {
  type ImagePart,
  type Message,
  messageText,
  type Part,
  partText,
  type ReasoningPart,
  type Role,
  type TextPart,
  type ToolCallPart,
  type ToolResultPart,
  TRANSCRIPT_SPEC_VERSION,
  text,
  type Warning,
} from './core/transcript.js';
export {
  defaultEntryModel,
  ENTRY_MODEL_FORMAT,
  type EntryModel,
  type EntryScorer,
  type EntryScorers,
  entryScorer,
  entryScorers,
  parseEntryModel,
} from './core/valuator/entry-model.js';
export {
  ANTHROPIC_SCALE,
  createTokenCounter,
  loadTokenCounter,
  type TokenizerName,
  tokenCounterForProvider,
} from './tokenizers/create-token-counter.js';
