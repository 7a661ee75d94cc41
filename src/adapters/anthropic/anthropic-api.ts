/**
 * Anthropic Messages API request (`system` and `messages` of `POST /v1/messages`), in the
 * provider's own spelling. Schema-first: each zod value and its type share one name. Blocks may
 * carry fields not listed here (`cache_control`, `citations`, ...): the adapter keeps them on the
 * part they sit on. Leaf objects (image sources) are strict.
 *
 * The adapter reads text, images, client tool use and results, and thinking; every other block
 * (`document`, `search_result`, `server_tool_use` and the server tools' `*_tool_result` blocks,
 * `mcp_tool_use` / `mcp_tool_result`, `container_upload`, and types yet to come) is an opaque
 * block, kept whole. A `system` message inside `messages` (mid-conversation system instructions,
 * text only) is read too.
 */
import { z } from 'zod';
import { type OpaqueWire, opaqueSchema } from '../opaque-part.js';

/** Block types the adapter reads into canonical parts; any other block is kept opaque. */
export type AnthropicReadBlockType =
  | 'text'
  | 'image'
  | 'tool_use'
  | 'tool_result'
  | 'thinking'
  | 'redacted_thinking';
export const READ_BLOCK_TYPES: ReadonlySet<string> = new Set<AnthropicReadBlockType>([
  'text',
  'image',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
]);

/**
 * A block the adapter keeps whole (an opaque part): any object whose `type` is a string not in
 * `READ_BLOCK_TYPES`. A malformed block of a read type is an error, never opaque: a broken
 * `tool_use` must not slip past the pairing of calls and results.
 */
export const AnthropicOpaqueBlock = opaqueSchema(READ_BLOCK_TYPES);
export type AnthropicOpaqueBlock = OpaqueWire;

/** Whether a block is one the adapter reads (the rest are kept opaque). */
export function isReadBlock<B extends { type: string }>(
  block: B,
): block is Extract<B, { type: AnthropicReadBlockType }> {
  return READ_BLOCK_TYPES.has(block.type);
}

/** `{ type: 'ephemeral', ttl?: '5m' | '1h' }`: a prompt-cache breakpoint after this block. */
export const AnthropicCacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.string().optional() });
export type AnthropicCacheControl = z.infer<typeof AnthropicCacheControl>;

export const AnthropicTextBlock = z.object({
  type: z.literal('text'),
  text: z.string(),
  cache_control: AnthropicCacheControl.nullable().optional(),
});
export type AnthropicTextBlock = z.infer<typeof AnthropicTextBlock>;

export const AnthropicImageSource = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('base64'), media_type: z.string(), data: z.string() }),
  z.strictObject({ type: z.literal('url'), url: z.string() }),
  z.strictObject({ type: z.literal('file'), file_id: z.string() }),
]);
export type AnthropicImageSource = z.infer<typeof AnthropicImageSource>;

export const AnthropicImageBlock = z.object({
  type: z.literal('image'),
  source: AnthropicImageSource,
  cache_control: AnthropicCacheControl.nullable().optional(),
});
export type AnthropicImageBlock = z.infer<typeof AnthropicImageBlock>;

export const AnthropicToolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  /** The arguments as a JSON object (not text, unlike OpenAI). */
  input: z.record(z.string(), z.unknown()),
  cache_control: AnthropicCacheControl.nullable().optional(),
});
export type AnthropicToolUseBlock = z.infer<typeof AnthropicToolUseBlock>;

/** What a tool result's content list holds: text, images, and opaque blocks (`document`, `search_result`). */
export const AnthropicToolResultContentBlock = z.union([
  z.discriminatedUnion('type', [AnthropicTextBlock, AnthropicImageBlock]),
  AnthropicOpaqueBlock,
]);
export type AnthropicToolResultContentBlock = AnthropicTextBlock | AnthropicImageBlock | AnthropicOpaqueBlock;

export const AnthropicToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(AnthropicToolResultContentBlock)]).optional(),
  is_error: z.boolean().optional(),
  cache_control: AnthropicCacheControl.nullable().optional(),
});
export type AnthropicToolResultBlock = Omit<z.infer<typeof AnthropicToolResultBlock>, 'content'> & {
  content?: string | AnthropicToolResultContentBlock[];
};

/** Extended thinking; `signature` must be sent back byte-exact. */
export const AnthropicThinkingBlock = z.object({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string(),
});
export type AnthropicThinkingBlock = z.infer<typeof AnthropicThinkingBlock>;

/** Thinking flagged by safety systems, returned encrypted in `data`. */
export const AnthropicRedactedThinkingBlock = z.object({
  type: z.literal('redacted_thinking'),
  data: z.string(),
});
export type AnthropicRedactedThinkingBlock = z.infer<typeof AnthropicRedactedThinkingBlock>;

export const AnthropicUserBlock = z.union([
  z.discriminatedUnion('type', [AnthropicTextBlock, AnthropicImageBlock, AnthropicToolResultBlock]),
  AnthropicOpaqueBlock,
]);
export type AnthropicUserBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicToolResultBlock
  | AnthropicOpaqueBlock;

export const AnthropicAssistantBlock = z.union([
  z.discriminatedUnion('type', [
    AnthropicTextBlock,
    AnthropicToolUseBlock,
    AnthropicThinkingBlock,
    AnthropicRedactedThinkingBlock,
  ]),
  AnthropicOpaqueBlock,
]);
export type AnthropicAssistantBlock =
  | AnthropicTextBlock
  | AnthropicToolUseBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicOpaqueBlock;

export const AnthropicUserMessage = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(AnthropicUserBlock)]),
});
export type AnthropicUserMessage = { role: 'user'; content: string | AnthropicUserBlock[] };

export const AnthropicAssistantMessage = z.object({
  role: z.literal('assistant'),
  content: z.union([z.string(), z.array(AnthropicAssistantBlock)]),
});
export type AnthropicAssistantMessage = { role: 'assistant'; content: string | AnthropicAssistantBlock[] };

/**
 * System instructions mid-conversation (Claude Opus 4.8 and later): text only; never the first
 * message; may carry `cache_control` and other fields of its own, which the adapter keeps.
 */
/**
 * A system message inside `messages`: text, or blocks kept whole beside it (Claude Code's MCP
 * tools that connect late come as `tool_addition` and `tool_removal` blocks).
 */
export const AnthropicSystemMessage = z.object({
  role: z.literal('system'),
  content: z.union([z.string(), z.array(z.union([AnthropicTextBlock, AnthropicOpaqueBlock]))]),
});
export type AnthropicSystemMessage = z.infer<typeof AnthropicSystemMessage> & Record<string, unknown>;

export const AnthropicMessage = z.discriminatedUnion('role', [
  AnthropicUserMessage,
  AnthropicAssistantMessage,
  AnthropicSystemMessage,
]);
export type AnthropicMessage = AnthropicUserMessage | AnthropicAssistantMessage | AnthropicSystemMessage;

/** Top-level `system`: a string or text blocks (which may carry `cache_control`). */
export const AnthropicSystem = z.union([z.string(), z.array(AnthropicTextBlock)]);
export type AnthropicSystem = z.infer<typeof AnthropicSystem>;

/** The transcript-bearing fields of a Messages request. */
export interface AnthropicMessagesPrompt {
  system?: AnthropicSystem;
  messages: AnthropicMessage[];
}
