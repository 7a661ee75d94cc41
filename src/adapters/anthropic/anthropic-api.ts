/**
 * Anthropic Messages API request (`system` and `messages` of `POST /v1/messages`), in the
 * provider's own spelling. Schema-first: each zod value and its type share one name. Blocks may
 * carry fields not listed here (`cache_control`, `citations`, ...): the adapter keeps them on the
 * part they sit on. Leaf objects (image sources) are strict.
 */
import { z } from 'zod';

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

export const AnthropicToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z
    .union([z.string(), z.array(z.discriminatedUnion('type', [AnthropicTextBlock, AnthropicImageBlock]))])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: AnthropicCacheControl.nullable().optional(),
});
export type AnthropicToolResultBlock = z.infer<typeof AnthropicToolResultBlock>;

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

export const AnthropicUserBlock = z.discriminatedUnion('type', [
  AnthropicTextBlock,
  AnthropicImageBlock,
  AnthropicToolResultBlock,
]);
export type AnthropicUserBlock = z.infer<typeof AnthropicUserBlock>;

export const AnthropicAssistantBlock = z.discriminatedUnion('type', [
  AnthropicTextBlock,
  AnthropicToolUseBlock,
  AnthropicThinkingBlock,
  AnthropicRedactedThinkingBlock,
]);
export type AnthropicAssistantBlock = z.infer<typeof AnthropicAssistantBlock>;

export const AnthropicUserMessage = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(AnthropicUserBlock)]),
});
export type AnthropicUserMessage = z.infer<typeof AnthropicUserMessage>;

export const AnthropicAssistantMessage = z.object({
  role: z.literal('assistant'),
  content: z.union([z.string(), z.array(AnthropicAssistantBlock)]),
});
export type AnthropicAssistantMessage = z.infer<typeof AnthropicAssistantMessage>;

export const AnthropicMessage = z.discriminatedUnion('role', [
  AnthropicUserMessage,
  AnthropicAssistantMessage,
]);
export type AnthropicMessage = z.infer<typeof AnthropicMessage>;

/** Top-level `system`: a string or text blocks (which may carry `cache_control`). */
export const AnthropicSystem = z.union([z.string(), z.array(AnthropicTextBlock)]);
export type AnthropicSystem = z.infer<typeof AnthropicSystem>;

/** The transcript-bearing fields of a Messages request. */
export interface AnthropicMessagesPrompt {
  system?: AnthropicSystem;
  messages: AnthropicMessage[];
}
