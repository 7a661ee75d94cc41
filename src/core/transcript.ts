/**
 * The canonical transcript: a provider-neutral message format.
 *
 * Every adapter converts its provider's wire messages to and from this shape; everything in
 * the core (indexing, operations, planners, the harness) speaks only this shape. It is
 * versioned: durable records that embed messages carry `TRANSCRIPT_SPEC_VERSION` and readers
 * refuse versions they do not know.
 */

/**
 * Version of this spec. Bump on any change that an older reader would misread. Version 2 added
 * `OpaquePart`; a version 1 record is a valid version 2 record as it is. Sidecar payloads use 3
 * for a tool's output a client attached to a request (`ATTACHED_OUTPUT_SPEC_VERSION`): the next
 * version of this spec is 4.
 */
export const TRANSCRIPT_SPEC_VERSION = 2;

/** Who produced a message. `tool` messages carry tool results only. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** Plain text. */
export interface TextPart {
  type: 'text';
  /** The exact text; never trimmed or re-encoded. */
  text: string;
  /**
   * Opaque provider extras attached to this part (for example Anthropic `cache_control` or
   * `citations`), kept so an adapter can write the part back exactly as it came.
   */
  providerData?: Record<string, unknown>;
}

/** An image, by reference: the core never holds decoded pixels. */
export interface ImagePart {
  type: 'image';
  /** A URL, a `data:` URI, or a provider file id (see `source`). */
  ref: string;
  /** How `ref` is to be read. */
  source: 'url' | 'data' | 'file-id';
  /** IANA media type when known (`image/png`). */
  mediaType?: string;
  /** Opaque provider extras (OpenAI `detail`, Anthropic `cache_control`). */
  providerData?: Record<string, unknown>;
}

/** A request from the assistant to run a tool. */
export interface ToolCallPart {
  type: 'tool-call';
  /** The provider's call id; unique within a transcript after normalisation. */
  id: string;
  /** Tool (function) name. */
  name: string;
  /**
   * The arguments as JSON text, exactly as the model produced them. Kept as text (not parsed)
   * so that a round trip is byte-exact even when the model emitted odd spacing.
   */
  arguments: string;
  /** Opaque provider extras (Responses `status`, item id, Anthropic `cache_control`). */
  providerData?: Record<string, unknown>;
}

/** The result of one tool call. Lives only in `tool` messages. */
export interface ToolResultPart {
  type: 'tool-result';
  /** Id of the `ToolCallPart` this answers. */
  callId: string;
  /** Tool name, copied from the call when the provider does not repeat it. */
  name: string;
  /**
   * The payload: text, or a list of text, image and opaque parts (an Anthropic `document` or
   * `search_result`) for providers that allow it.
   */
  content: string | Array<TextPart | ImagePart | OpaquePart>;
  /** True when the tool reported a failure (Anthropic `is_error`). */
  isError?: boolean;
  /** Opaque provider extras (Anthropic `cache_control`, Responses item id). */
  providerData?: Record<string, unknown>;
}

/** Model "thinking". Signatures and encrypted payloads are opaque and must survive intact. */
export interface ReasoningPart {
  type: 'reasoning';
  /** The visible reasoning text (empty for redacted reasoning). */
  text: string;
  /** Anthropic thinking `signature`; must be sent back byte-exact. */
  signature?: string;
  /** Encrypted or redacted payload (Anthropic `redacted_thinking.data`, OpenAI `encrypted_content`). */
  redactedData?: string;
  /** Opaque provider extras (Responses reasoning item id and summary shape). */
  providerData?: Record<string, unknown>;
}

/**
 * A provider block or item the core does not read (an Anthropic `document` or
 * `web_search_tool_result`, an OpenAI Chat `input_audio` part, a Responses `web_search_call`
 * item), kept whole and in order so that the adapter that read it writes it back byte for byte.
 * Server-side tool use and its result are two opaque parts of one assistant message: they are not
 * tool calls, so nothing pairs, renames or splits them. Another adapter writes an opaque part as
 * text (its `text`, or a placeholder naming its `kind`) with an `unsupported-part` warning.
 */
export interface OpaquePart {
  type: 'opaque';
  /** The providerData namespace of the adapter that read it (`anthropic`, `openaiChat`, ...). */
  provider: string;
  /** The wire type (`web_search_tool_result`, `input_audio`), for placeholders and warnings. */
  kind: string;
  /**
   * What the block shows the model as text, derived from `data` when read (search queries,
   * titles, URLs, command output, plain-text documents); empty for audio, PDFs and encrypted
   * payloads. Counted as tokens and read for anchors; never written back.
   */
  text: string;
  /** The wire block or item exactly as it came; what its own adapter writes back. */
  data: Record<string, unknown>;
  /** Adapter bookkeeping beside the block (which wire item it opened), never part of `data`. */
  providerData?: Record<string, unknown>;
}

/** Any part of a message. */
export type Part = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart | OpaquePart;

/** One message of the transcript. */
export interface Message {
  role: Role;
  /** Ordered content. An assistant message may hold reasoning, text and tool calls together. */
  parts: Part[];
  /**
   * Opaque provider extras on the message (OpenAI `name`, `refusal`, Responses item ids,
   * the recording's `timestamp`), kept for exact round trips.
   */
  providerData?: Record<string, unknown>;
}

/** Something an adapter or the harness changed on the way, said out loud instead of silently. */
export interface Warning {
  /** Stable machine-readable code, e.g. `orphan-tool-result`. */
  code: string;
  /** Index of the message it concerns, when there is one. */
  messageIndex?: number;
  /** Human-readable explanation. */
  message: string;
}

/** The text a part shows the model, used for token counts and anchor extraction. */
export function partText(part: Part): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
      return '';
    case 'tool-call':
      return `${part.name} ${part.arguments}`;
    case 'tool-result':
      return typeof part.content === 'string' ? part.content : part.content.map(partText).join('\n');
    case 'reasoning':
    case 'opaque':
      return part.text;
  }
}

/** What an image stands as where only text can stand for it. */
export const IMAGE_MARK = '[image]';

/** The text of parts where only text can stand for them, joined by newlines: an image as `IMAGE_MARK`. */
export function textOfParts(parts: readonly Part[]): string {
  return parts.map((part) => (part.type === 'image' ? IMAGE_MARK : partText(part))).join('\n');
}

/** All text of a message, parts joined by newlines. */
export function messageText(message: Message): string {
  return message.parts.map(partText).join('\n');
}

/** Convenience constructors, used by adapters and tests alike. */
export const text = (value: string): TextPart => ({ type: 'text', text: value });
