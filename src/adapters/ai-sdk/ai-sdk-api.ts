/**
 * Vercel AI SDK (v5/v6) `ModelMessage`, the prompt shape of `generateText` / `streamText`,
 * declared here so the adapter needs no runtime import of `ai`. Schema-first: each zod value
 * and its type share one name.
 *
 * Parts the adapter does not read are kept whole (`OpaquePart`): tool-approval requests and
 * responses, a provider-executed tool's call and result inside the assistant message, and any
 * part type a later SDK adds. Not supported (refused with a clear error): `custom` tool-output
 * items and object-valued file ids.
 */
import { z } from 'zod';
import { type OpaqueWire, opaqueSchema } from '../opaque-part.js';

/** Per-provider options, `{ anthropic: { cacheControl: { type: 'ephemeral' } } }`. */
export const ModelProviderOptions = z.record(z.string(), z.record(z.string(), z.unknown()));
export type ModelProviderOptions = z.infer<typeof ModelProviderOptions>;

/** Base64 text, a `data:` or `http(s):` URL string, bytes, or a URL object. */
export const ModelDataContent = z.union([
  z.string(),
  z.instanceof(Uint8Array),
  z.instanceof(ArrayBuffer),
  z.instanceof(URL),
]);
export type ModelDataContent = z.infer<typeof ModelDataContent>;

const options = { providerOptions: ModelProviderOptions.optional() };

export const ModelTextPart = z.object({ type: z.literal('text'), text: z.string(), ...options });
export type ModelTextPart = z.infer<typeof ModelTextPart>;

export const ModelImagePart = z.object({
  type: z.literal('image'),
  image: ModelDataContent,
  mediaType: z.string().optional(),
  ...options,
});
export type ModelImagePart = z.infer<typeof ModelImagePart>;

export const ModelFilePart = z.object({
  type: z.literal('file'),
  data: ModelDataContent,
  filename: z.string().optional(),
  mediaType: z.string(),
  ...options,
});
export type ModelFilePart = z.infer<typeof ModelFilePart>;

/** Reasoning; Anthropic keeps `signature` / `redactedData` in `providerOptions.anthropic`. */
export const ModelReasoningPart = z.object({ type: z.literal('reasoning'), text: z.string(), ...options });
export type ModelReasoningPart = z.infer<typeof ModelReasoningPart>;

export const ModelToolCallPart = z.object({
  type: z.literal('tool-call'),
  toolCallId: z.string(),
  toolName: z.string(),
  /** The arguments as a JSON-serialisable value (the raw text for an invalid call). */
  input: z.unknown().refine((value) => value !== undefined, 'input is required'),
  providerExecuted: z.boolean().optional(),
  ...options,
});
export type ModelToolCallPart = z.infer<typeof ModelToolCallPart>;

export const ModelToolResultContentItem = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string(), ...options }),
  z.object({ type: z.literal('media'), data: z.string(), mediaType: z.string() }),
  z.object({ type: z.literal('image-data'), data: z.string(), mediaType: z.string(), ...options }),
  z.object({
    type: z.literal('file-data'),
    data: z.string(),
    mediaType: z.string(),
    filename: z.string().optional(),
    ...options,
  }),
  z.object({ type: z.literal('image-url'), url: z.string(), ...options }),
  z.object({ type: z.literal('file-url'), url: z.string(), mediaType: z.string().optional(), ...options }),
  z.object({ type: z.literal('image-file-id'), fileId: z.string(), ...options }),
  z.object({ type: z.literal('file-id'), fileId: z.string(), ...options }),
]);
export type ModelToolResultContentItem = z.infer<typeof ModelToolResultContentItem>;

/**
 * A JSON value as the SDK takes one (`ai`'s `jsonValueSchema`): an object's properties may be
 * `undefined` (a tool that returns `{ stdout, stderr: undefined }`), which JSON text leaves out.
 */
export const ModelJsonValue: z.ZodType<unknown> = z.lazy(() =>
  z.union([
    z.null(),
    z.string(),
    z.number(),
    z.boolean(),
    z.array(ModelJsonValue),
    z.record(z.string(), ModelJsonValue.optional()),
  ]),
);

export const ModelToolResultOutput = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), value: z.string(), ...options }),
  z.object({ type: z.literal('json'), value: ModelJsonValue, ...options }),
  z.object({ type: z.literal('execution-denied'), reason: z.string().optional(), ...options }),
  z.object({ type: z.literal('error-text'), value: z.string(), ...options }),
  z.object({ type: z.literal('error-json'), value: ModelJsonValue, ...options }),
  z.object({ type: z.literal('content'), value: z.array(ModelToolResultContentItem), ...options }),
]);
export type ModelToolResultOutput = z.infer<typeof ModelToolResultOutput>;

export const ModelToolResultPart = z.object({
  type: z.literal('tool-result'),
  toolCallId: z.string(),
  toolName: z.string(),
  output: ModelToolResultOutput,
  ...options,
});
export type ModelToolResultPart = z.infer<typeof ModelToolResultPart>;

export const SystemModelMessage = z.object({ role: z.literal('system'), content: z.string(), ...options });
export type SystemModelMessage = z.infer<typeof SystemModelMessage>;

/** Part types each role's content is read by; any other part of it is kept whole. */
export const USER_PART_TYPES: ReadonlySet<string> = new Set(['text', 'image', 'file']);
export const ASSISTANT_PART_TYPES: ReadonlySet<string> = new Set(['text', 'file', 'reasoning', 'tool-call']);
export const TOOL_PART_TYPES: ReadonlySet<string> = new Set(['tool-result']);

/** A part kept whole: any object whose `type` the role does not read. */
export type ModelOpaquePart = OpaqueWire;

/** A request for the user's approval of a tool call (`needsApproval`), kept whole. */
export interface ModelToolApprovalRequest {
  type: 'tool-approval-request';
  approvalId: string;
  toolCallId: string;
}

/** The user's answer to an approval request, kept whole. */
export interface ModelToolApprovalResponse {
  type: 'tool-approval-response';
  approvalId: string;
  approved: boolean;
  reason?: string | undefined;
  providerExecuted?: boolean | undefined;
}

type Content<Part> = string | Part[];
type WithOptions = { providerOptions?: ModelProviderOptions | undefined };

export const UserModelMessage = z.object({
  role: z.literal('user'),
  content: z.union([
    z.string(),
    z.array(
      z.union([
        z.discriminatedUnion('type', [ModelTextPart, ModelImagePart, ModelFilePart]),
        opaqueSchema(USER_PART_TYPES),
      ]),
    ),
  ]),
  ...options,
});
/**
 * The message types name the parts the SDK defines, so that code reading them narrows by `type`;
 * the schemas also take, and the adapter keeps whole, a part type a later SDK adds.
 */
export type UserModelMessage = {
  role: 'user';
  content: Content<ModelTextPart | ModelImagePart | ModelFilePart>;
} & WithOptions;

export const AssistantModelMessage = z.object({
  role: z.literal('assistant'),
  content: z.union([
    z.string(),
    z.array(
      z.union([
        z.discriminatedUnion('type', [ModelTextPart, ModelFilePart, ModelReasoningPart, ModelToolCallPart]),
        opaqueSchema(ASSISTANT_PART_TYPES),
      ]),
    ),
  ]),
  ...options,
});
/** A provider-executed tool's call and result stand in the assistant message, both kept whole. */
export type AssistantModelMessage = {
  role: 'assistant';
  content: Content<
    | ModelTextPart
    | ModelFilePart
    | ModelReasoningPart
    | ModelToolCallPart
    | ModelToolResultPart
    | ModelToolApprovalRequest
  >;
} & WithOptions;

export const ToolModelMessage = z.object({
  role: z.literal('tool'),
  content: z.array(z.union([ModelToolResultPart, opaqueSchema(TOOL_PART_TYPES)])),
  ...options,
});
export type ToolModelMessage = {
  role: 'tool';
  content: Array<ModelToolResultPart | ModelToolApprovalResponse>;
} & WithOptions;

export const ModelMessage = z.discriminatedUnion('role', [
  SystemModelMessage,
  UserModelMessage,
  AssistantModelMessage,
  ToolModelMessage,
]);
export type ModelMessage = SystemModelMessage | UserModelMessage | AssistantModelMessage | ToolModelMessage;
