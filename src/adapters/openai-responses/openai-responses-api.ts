/**
 * OpenAI Responses API input items (`input` of `POST /v1/responses`), in the provider's own
 * spelling. Schema-first: each zod value and its type share one name. Items and content parts
 * may carry fields not listed here (the adapter keeps them); leaf objects are strict.
 *
 * Supported items: messages (the `EasyInputMessage` form `{ role, content }` and the typed form
 * `{ type: 'message', ... }`, including assistant output messages passed back as input),
 * `function_call`, `function_call_output` and `reasoning`. Other item types are refused.
 */
import { z } from 'zod';

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

export const ResponseMessageContentPart = z.discriminatedUnion('type', [
  ResponseInputText,
  ResponseOutputText,
  ResponseOutputRefusal,
  ResponseInputImage,
]);
export type ResponseMessageContentPart = z.infer<typeof ResponseMessageContentPart>;

export const ResponseMessageItem = z.object({
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
export type ResponseMessageItem = z.infer<typeof ResponseMessageItem>;

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
  output: z.union([
    z.string(),
    z.array(z.discriminatedUnion('type', [ResponseInputText, ResponseInputImage])),
  ]),
  status: z.string().nullable().optional(),
});
export type ResponseFunctionCallOutputItem = z.infer<typeof ResponseFunctionCallOutputItem>;

export const ResponseReasoningItem = z.object({
  type: z.literal('reasoning'),
  /** Item id (`rs_...`); required by the API when the item is passed back. */
  id: z.string().optional(),
  /** Visible reasoning summaries, often empty. */
  summary: z.array(z.strictObject({ type: z.literal('summary_text'), text: z.string() })),
  /** Raw reasoning text of open-weight models; kept as it came. */
  content: z.array(z.strictObject({ type: z.literal('reasoning_text'), text: z.string() })).optional(),
  /** Opaque reasoning state for stateless (`store: false`) use; must come back byte-exact. */
  encrypted_content: z.string().nullable().optional(),
  status: z.string().optional(),
});
export type ResponseReasoningItem = z.infer<typeof ResponseReasoningItem>;

export type ResponseInputItem =
  | ResponseMessageItem
  | ResponseFunctionCallItem
  | ResponseFunctionCallOutputItem
  | ResponseReasoningItem;

const ITEM_SCHEMAS = {
  message: ResponseMessageItem,
  function_call: ResponseFunctionCallItem,
  function_call_output: ResponseFunctionCallOutputItem,
  reasoning: ResponseReasoningItem,
} as const;

/** The schema for an item by its `type` (a message when absent), or undefined when unsupported. */
export function itemSchema(item: unknown): z.ZodType<ResponseInputItem> | undefined {
  const type = typeof item === 'object' && item !== null ? (item as { type?: unknown }).type : undefined;
  if (type === undefined) return ResponseMessageItem;
  return typeof type === 'string' && type in ITEM_SCHEMAS
    ? ITEM_SCHEMAS[type as keyof typeof ITEM_SCHEMAS]
    : undefined;
}
