/**
 * OpenAI Chat Completions request messages (`messages` of `POST /v1/chat/completions`), in the
 * provider's own spelling. Schema-first: each zod value and its type share one name. Message
 * and content-part objects may carry fields not listed here (the adapter keeps them); leaf
 * objects are strict so that nothing unknown inside them is lost unnoticed.
 *
 * Also accepted, as found in recorded sessions and OpenAI-compatible servers (DeepSeek, vLLM):
 * `reasoning_content` on assistant messages, the model's thinking text. A user content part of a
 * type the adapter does not read (`input_audio`, `file`, and any type yet to come) is kept whole
 * as an opaque part.
 */
import { z } from 'zod';
import { type OpaqueWire, opaqueSchema } from '../opaque-part.js';

/** User content part types the adapter reads; any other part is kept opaque. */
export const READ_USER_PART_TYPES: ReadonlySet<string> = new Set(['text', 'image_url']);

/** A user content part the adapter keeps whole: `input_audio`, `file`, ... */
export const OpenAIChatOpaquePart = opaqueSchema(READ_USER_PART_TYPES);
export type OpenAIChatOpaquePart = OpaqueWire;

/** Whether a user content part is one the adapter reads. */
export function isReadUserPart<P extends { type: string }>(
  part: P,
): part is Extract<P, { type: 'text' | 'image_url' }> {
  return READ_USER_PART_TYPES.has(part.type);
}

export const OpenAIChatTextPart = z.object({ type: z.literal('text'), text: z.string() });
export type OpenAIChatTextPart = z.infer<typeof OpenAIChatTextPart>;

export const OpenAIChatImagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.strictObject({
    /** An `https:` URL or a `data:image/...;base64,` URI. */
    url: z.string(),
    /** `auto` | `low` | `high`. */
    detail: z.string().optional(),
  }),
});
export type OpenAIChatImagePart = z.infer<typeof OpenAIChatImagePart>;

export const OpenAIChatRefusalPart = z.object({ type: z.literal('refusal'), refusal: z.string() });
export type OpenAIChatRefusalPart = z.infer<typeof OpenAIChatRefusalPart>;

export const OpenAIChatFunctionToolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string(),
    /** JSON text as the model produced it (not guaranteed to be valid JSON). */
    arguments: z.string(),
  }),
});
export type OpenAIChatFunctionToolCall = z.infer<typeof OpenAIChatFunctionToolCall>;

/** A call of a `custom` (free-text input) tool. */
export const OpenAIChatCustomToolCall = z.object({
  id: z.string(),
  type: z.literal('custom'),
  custom: z.strictObject({ name: z.string(), input: z.string() }),
});
export type OpenAIChatCustomToolCall = z.infer<typeof OpenAIChatCustomToolCall>;

export const OpenAIChatToolCall = z.discriminatedUnion('type', [
  OpenAIChatFunctionToolCall,
  OpenAIChatCustomToolCall,
]);
export type OpenAIChatToolCall = z.infer<typeof OpenAIChatToolCall>;

const textContent = z.union([z.string(), z.array(OpenAIChatTextPart)]);

export const OpenAIChatSystemMessage = z.object({
  role: z.literal('system'),
  content: textContent,
  name: z.string().optional(),
});
export type OpenAIChatSystemMessage = z.infer<typeof OpenAIChatSystemMessage>;

/** The `system` role of reasoning models; canonically a system message. */
export const OpenAIChatDeveloperMessage = z.object({
  role: z.literal('developer'),
  content: textContent,
  name: z.string().optional(),
});
export type OpenAIChatDeveloperMessage = z.infer<typeof OpenAIChatDeveloperMessage>;

export const OpenAIChatUserPart = z.union([
  z.discriminatedUnion('type', [OpenAIChatTextPart, OpenAIChatImagePart]),
  OpenAIChatOpaquePart,
]);
export type OpenAIChatUserPart = OpenAIChatTextPart | OpenAIChatImagePart | OpenAIChatOpaquePart;

export const OpenAIChatUserMessage = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(OpenAIChatUserPart)]),
  name: z.string().optional(),
});
export type OpenAIChatUserMessage = Omit<z.infer<typeof OpenAIChatUserMessage>, 'content'> & {
  content: string | OpenAIChatUserPart[];
};

export const OpenAIChatAssistantMessage = z.object({
  role: z.literal('assistant'),
  /** Null (or absent) when the reply is only tool calls. */
  content: z
    .union([
      z.string(),
      z.array(z.discriminatedUnion('type', [OpenAIChatTextPart, OpenAIChatRefusalPart])),
      z.null(),
    ])
    .optional(),
  name: z.string().optional(),
  refusal: z.string().nullable().optional(),
  /** Null where a client sends back the SDK's dumped reply (Python's `model_dump()`). */
  tool_calls: z.array(OpenAIChatToolCall).nullable().optional(),
  /** Thinking text stored apart from the visible reply (DeepSeek, recorded Claude Code sessions). */
  reasoning_content: z.string().nullable().optional(),
});
export type OpenAIChatAssistantMessage = z.infer<typeof OpenAIChatAssistantMessage>;

export const OpenAIChatToolMessage = z.object({
  role: z.literal('tool'),
  content: textContent,
  /** Id of the assistant tool call this answers. */
  tool_call_id: z.string(),
});
export type OpenAIChatToolMessage = z.infer<typeof OpenAIChatToolMessage>;

export const OpenAIChatMessage = z.discriminatedUnion('role', [
  OpenAIChatSystemMessage,
  OpenAIChatDeveloperMessage,
  OpenAIChatUserMessage,
  OpenAIChatAssistantMessage,
  OpenAIChatToolMessage,
]);
export type OpenAIChatMessage =
  | OpenAIChatSystemMessage
  | OpenAIChatDeveloperMessage
  | OpenAIChatUserMessage
  | OpenAIChatAssistantMessage
  | OpenAIChatToolMessage;
