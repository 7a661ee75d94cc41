/**
 * OpenAI Responses API input items (`input` of `POST /v1/responses`), in the provider's own
 * spelling. Schema-first: each zod value and its type share one name. Items and content parts
 * may carry fields not listed here (the adapter keeps them); leaf objects are strict.
 *
 * Read items: messages (the `EasyInputMessage` form `{ role, content }` and the typed form
 * `{ type: 'message', ... }`, including assistant output messages passed back as input),
 * `reasoning`, and the client tool calls with their outputs: `function_call`,
 * `custom_tool_call` (free-text input, as Codex's `apply_patch`) and `local_shell_call`. Every
 * other item (`web_search_call`, `compaction`, `tool_search_call`, `item_reference`, ...) and
 * every other content part (`input_file`, ...) is kept whole as an opaque part.
 */
import { z } from 'zod';
import { type OpaqueWire, opaqueSchema } from '../opaque-part.js';

/** An item or content part the adapter keeps whole (an opaque part). */
export type ResponseOpaque = OpaqueWire;

export const ResponseInputText = z.object({ type: z.literal('input_text'), text: z.string() });
export type ResponseInputText = z.infer<typeof ResponseInputText>;

/** Assistant text; `annotations` and `logprobs` are kept as they came. */
export const ResponseOutputText = z.object({ type: z.literal('output_text'), text: z.string() });
export type ResponseOutputText = z.infer<typeof ResponseOutputText>;

export const ResponseOutputRefusal = z.object({ type: z.literal('refusal'), refusal: z.string() });
export type ResponseOutputRefusal = z.infer<typeof ResponseOutputRefusal>;

/** An image by URL (`https:` or `data:`) or by uploaded file id. */
export const ResponseInputImage = z
  .object({
    type: z.literal('input_image'),
    image_url: z.string().nullable().optional(),
    file_id: z.string().nullable().optional(),
    /** `low` | `high` | `auto` | `original`. */
    detail: z.string().optional(),
  })
  .refine((part) => typeof part.image_url === 'string' || typeof part.file_id === 'string', {
    message: 'input_image needs an image_url or a file_id',
  });
export type ResponseInputImage = z.infer<typeof ResponseInputImage>;

/** Content part types the adapter reads; any other part (`input_file`, ...) is kept opaque. */
export const READ_CONTENT_TYPES: ReadonlySet<string> = new Set([
  'input_text',
  'output_text',
  'refusal',
  'input_image',
]);

export const ResponseMessageContentPart = z.union([
  z.discriminatedUnion('type', [
    ResponseInputText,
    ResponseOutputText,
    ResponseOutputRefusal,
    ResponseInputImage,
  ]),
  opaqueSchema(READ_CONTENT_TYPES),
]);
export type ResponseMessageContentPart =
  | ResponseInputText
  | ResponseOutputText
  | ResponseOutputRefusal
  | ResponseInputImage
  | ResponseOpaque;

/** What a tool output's content list holds: text, images, and opaque parts (`input_file`). */
export const ResponseOutputContentPart = z.union([
  z.discriminatedUnion('type', [ResponseInputText, ResponseInputImage]),
  opaqueSchema(READ_CONTENT_TYPES),
]);
export type ResponseOutputContentPart = ResponseInputText | ResponseInputImage | ResponseOpaque;

/** Whether a content part is one the adapter reads (the rest are kept opaque). */
export function isReadContent<P extends { type: string }>(
  part: P,
): part is Extract<P, { type: 'input_text' | 'output_text' | 'refusal' | 'input_image' }> {
  return READ_CONTENT_TYPES.has(part.type);
}

const MessageItemSchema = z.object({
  /** Absent in the `EasyInputMessage` form. */
  type: z.literal('message').optional(),
  /** Present on assistant output messages passed back as input (`msg_...`). */
  id: z.string().optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(ResponseMessageContentPart)]),
  status: z.string().optional(),
  /** Assistant phase of newer models: `commentary` | `final_answer`. */
  phase: z.string().nullable().optional(),
});
export const ResponseMessageItem = MessageItemSchema;
export type ResponseMessageItem = Omit<z.infer<typeof MessageItemSchema>, 'content'> & {
  content: string | ResponseMessageContentPart[];
};

export const ResponseFunctionCallItem = z.object({
  type: z.literal('function_call'),
  /** Item id (`fc_...`). */
  id: z.string().optional(),
  /** Id the matching `function_call_output` names (`call_...`). */
  call_id: z.string(),
  name: z.string(),
  /** JSON text as the model produced it. */
  arguments: z.string(),
  status: z.string().optional(),
});
export type ResponseFunctionCallItem = z.infer<typeof ResponseFunctionCallItem>;

export const ResponseFunctionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  id: z.string().nullable().optional(),
  call_id: z.string(),
  output: z.union([z.string(), z.array(ResponseOutputContentPart)]),
  status: z.string().nullable().optional(),
});
export type ResponseFunctionCallOutputItem = Omit<
  z.infer<typeof ResponseFunctionCallOutputItem>,
  'output'
> & {
  output: string | ResponseOutputContentPart[];
};

/** A call of a `custom` tool: free-text `input` (Codex's `apply_patch` for GPT-5 models). */
export const ResponseCustomToolCallItem = z.object({
  type: z.literal('custom_tool_call'),
  id: z.string().optional(),
  call_id: z.string(),
  name: z.string(),
  input: z.string(),
  status: z.string().optional(),
});
export type ResponseCustomToolCallItem = z.infer<typeof ResponseCustomToolCallItem>;

export const ResponseCustomToolCallOutputItem = z.object({
  type: z.literal('custom_tool_call_output'),
  id: z.string().nullable().optional(),
  call_id: z.string(),
  output: z.union([z.string(), z.array(ResponseOutputContentPart)]),
  status: z.string().nullable().optional(),
});
export type ResponseCustomToolCallOutputItem = Omit<
  z.infer<typeof ResponseCustomToolCallOutputItem>,
  'output'
> & {
  output: string | ResponseOutputContentPart[];
};

/**
 * A command for the `local_shell` tool (codex-mini). Its `action` object is the call's
 * arguments; its output comes back as a `local_shell_call_output` (whose `id` is this `call_id`)
 * or, as Codex sends it, as a `function_call_output`.
 */
export const ResponseLocalShellCallItem = z.object({
  type: z.literal('local_shell_call'),
  id: z.string().optional(),
  call_id: z.string(),
  action: z.record(z.string(), z.unknown()),
  status: z.string().optional(),
});
export type ResponseLocalShellCallItem = z.infer<typeof ResponseLocalShellCallItem>;

export const ResponseLocalShellCallOutputItem = z.object({
  type: z.literal('local_shell_call_output'),
  /** The `call_id` of the `local_shell_call` this answers. */
  id: z.string(),
  /** A JSON string of the command's output. */
  output: z.string(),
  status: z.string().nullable().optional(),
});
export type ResponseLocalShellCallOutputItem = z.infer<typeof ResponseLocalShellCallOutputItem>;

export const ResponseReasoningItem = z.object({
  type: z.literal('reasoning'),
  /** Item id (`rs_...`); required by the API when the item is passed back. */
  id: z.string().optional(),
  /** Visible reasoning summaries, often empty. */
  summary: z.array(z.strictObject({ type: z.literal('summary_text'), text: z.string() })),
  /**
   * Raw reasoning text of open-weight models; kept as it came. Codex sends `null` on every
   * reasoning item it passes back (its raw reasoning stripped), and its own items may hold `text`.
   */
  content: z
    .array(z.strictObject({ type: z.enum(['reasoning_text', 'text']), text: z.string() }))
    .nullable()
    .optional(),
  /** Opaque reasoning state for stateless (`store: false`) use; must come back byte-exact. */
  encrypted_content: z.string().nullable().optional(),
  status: z.string().optional(),
});
export type ResponseReasoningItem = z.infer<typeof ResponseReasoningItem>;

/** A read item, by its `type`. */
export type ResponseReadItem =
  | ResponseMessageItem
  | ResponseFunctionCallItem
  | ResponseFunctionCallOutputItem
  | ResponseReasoningItem
  | ResponseCustomToolCallItem
  | ResponseCustomToolCallOutputItem
  | ResponseLocalShellCallItem
  | ResponseLocalShellCallOutputItem;

export type ResponseInputItem = ResponseReadItem | ResponseOpaque;

const ITEM_SCHEMAS = {
  message: ResponseMessageItem,
  function_call: ResponseFunctionCallItem,
  function_call_output: ResponseFunctionCallOutputItem,
  reasoning: ResponseReasoningItem,
  custom_tool_call: ResponseCustomToolCallItem,
  custom_tool_call_output: ResponseCustomToolCallOutputItem,
  local_shell_call: ResponseLocalShellCallItem,
  local_shell_call_output: ResponseLocalShellCallOutputItem,
} as const;

/** Item types the adapter reads; any other item is kept opaque. */
export const READ_ITEM_TYPES: ReadonlySet<string> = new Set(Object.keys(ITEM_SCHEMAS));

const ResponseOpaqueItem = opaqueSchema(READ_ITEM_TYPES);

/**
 * The schema for an item by its `type`: a message when absent, the read item's own schema, or the
 * opaque schema for any other string type; undefined when `type` is not a string at all.
 */
export function itemSchema(item: unknown): z.ZodType<ResponseInputItem> | undefined {
  const type = typeof item === 'object' && item !== null ? (item as { type?: unknown }).type : undefined;
  if (type === undefined) return ResponseMessageItem as z.ZodType<ResponseInputItem>;
  if (typeof type !== 'string') return undefined;
  const schema = type in ITEM_SCHEMAS ? ITEM_SCHEMAS[type as keyof typeof ITEM_SCHEMAS] : ResponseOpaqueItem;
  return schema as z.ZodType<ResponseInputItem>;
}

/** Whether an item is one the adapter reads (the rest are kept opaque). */
export function isReadItem(item: ResponseInputItem): item is ResponseReadItem {
  return item.type === undefined || READ_ITEM_TYPES.has(item.type);
}
