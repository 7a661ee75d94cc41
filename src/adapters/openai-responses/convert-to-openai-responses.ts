import {
  type ImagePart,
  type Message,
  type OpaquePart,
  type Part,
  type ReasoningPart,
  type Role,
  type TextPart,
  type ToolCallPart,
  type ToolResultPart,
  textOfParts,
  type Warning,
} from '../../core/transcript.js';
import { ownOpaqueData } from '../opaque-part.js';
import { type Emit, placeholderText } from '../placeholder-text.js';
import { isRecord, type JsonRecord, readSlice, withExtras } from '../provider-data.js';
import { type WireSource, writeEachMessage } from '../read-resume.js';
import type {
  ResponseCustomToolCallItem,
  ResponseFunctionCallItem,
  ResponseFunctionCallOutputItem,
  ResponseInputImage,
  ResponseInputItem,
  ResponseLocalShellCallItem,
  ResponseLocalShellCallOutputItem,
  ResponseMessageContentPart,
  ResponseMessageItem,
  ResponseOpaque,
  ResponseOutputContentPart,
  ResponseReasoningItem,
} from './openai-responses-api.js';
import { defaultContentShape, defaultTextType, NAMESPACE, splitSummary } from './responses-hints.js';

/** Parts a message item's content can hold. */
type ContentPart = TextPart | ImagePart | OpaquePart;

/**
 * Canonical transcript to OpenAI Responses input items; the exact inverse of
 * `fromOpenAIResponses` for transcripts it produced (custom and local shell tool calls and their
 * outputs go back as the items they came as; opaque parts it read go back as they came). Lossy
 * cases push a warning: `reasoning-metadata-dropped` (a signature has no Responses field),
 * `reasoning-without-id` (the API may refuse a reasoning item it did not issue),
 * `tool-error-flag-dropped`, `unsupported-part` (a part the role cannot hold, or another
 * provider's opaque part, becomes a text placeholder) and `empty-content` (an assistant message
 * with no parts yields no item).
 *
 * `source`: the items the transcript was read from, with the reading; those whose messages stand
 * in `messages` whole (`wholeElementsOf`) are written as the client's items themselves.
 */
export function toOpenAIResponses(
  messages: Message[],
  source?: WireSource<ResponseInputItem>,
): {
  messages: ResponseInputItem[];
  warnings: Warning[];
} {
  const warnings: Warning[] = [];
  const items = writeEachMessage(messages, source, (message, messageIndex): ResponseInputItem[] => {
    const emit: Emit = (warning) => warnings.push({ ...warning, messageIndex });
    if (message.role === 'assistant') return assistantItems(message, emit);
    if (message.role === 'tool') return toolItems(message, emit);
    // An item kept whole that stood as a message of its own (the developer's `additional_tools`).
    const whole = message.parts.length === 1 ? opaqueItem(message.parts[0]!) : undefined;
    if (whole) return [whole];
    const parts = message.parts.map((part) => contentOf(part, emit));
    const hints = readSlice(message, NAMESPACE);
    const role = message.role === 'system' && hints.role === 'developer' ? 'developer' : message.role;
    return [messageItem(role, message.role, parts, hints)];
  });
  return { messages: items, warnings };
}

/** A part as message content: text, an image, or an opaque part this adapter read; else text. */
function contentOf(part: Part, emit: Emit): ContentPart {
  if (part.type === 'text' || part.type === 'image') return part;
  if (part.type === 'opaque' && ownOpaqueData(part, NAMESPACE)) return part;
  return placeholder(part, emit);
}

/** The item an opaque part stands for, when this adapter read it as a whole item. */
function opaqueItem(part: Part): ResponseOpaque | undefined {
  if (part.type !== 'opaque' || readSlice(part, NAMESPACE).level !== 'item') return undefined;
  return ownOpaqueData(part, NAMESPACE) as ResponseOpaque | undefined;
}

function assistantItems(message: Message, emit: Emit): ResponseInputItem[] {
  if (message.parts.length === 0)
    emit({ code: 'empty-content', message: 'an assistant message with no parts yields no item' });
  const items: ResponseInputItem[] = [];
  let run: { parts: ContentPart[]; hints: JsonRecord } | undefined;
  const flush = () => {
    if (run) items.push(messageItem('assistant', 'assistant', run.parts, run.hints));
    run = undefined;
  };
  for (const part of message.parts) {
    const item = opaqueItem(part);
    if (part.type === 'reasoning' || part.type === 'tool-call' || item) {
      flush();
      if (item) items.push(item);
      else if (part.type === 'reasoning') items.push(reasoningItem(part, emit));
      else if (part.type === 'tool-call') items.push(toolCallItem(part));
      continue;
    }
    const content =
      part.type === 'text' || part.type === 'opaque' ? contentOf(part, emit) : placeholder(part, emit);
    const itemHints = readSlice(content, NAMESPACE).message;
    if (isRecord(itemHints)) flush();
    run ??= { parts: [], hints: isRecord(itemHints) ? itemHints : {} };
    if (run.hints.content !== 'empty') run.parts.push(content);
  }
  flush();
  return items;
}

function messageItem(
  role: ResponseMessageItem['role'],
  canonicalRole: Role,
  parts: readonly ContentPart[],
  hints: JsonRecord,
): ResponseMessageItem {
  const useString =
    hints.content === 'string' || (hints.content === undefined && defaultContentShape(parts) === 'string');
  const onlyText = parts.length === 1 && parts[0]?.type === 'text' ? parts[0].text : undefined;
  const content =
    useString && onlyText !== undefined ? onlyText : parts.map((part) => contentPart(part, canonicalRole));
  const item: ResponseMessageItem = {
    ...(hints.typed === true ? { type: 'message' as const } : {}),
    ...(typeof hints.id === 'string' ? { id: hints.id } : {}),
    ...(typeof hints.status === 'string' ? { status: hints.status } : {}),
    role,
    content,
    ...(typeof hints.phase === 'string' || hints.phase === null ? { phase: hints.phase } : {}),
  };
  return withExtras(item, hints.extra);
}

function contentPart(part: ContentPart, role: Role): ResponseMessageContentPart {
  if (part.type === 'opaque') return part.data as ResponseOpaque;
  const hints = readSlice(part, NAMESPACE);
  if (part.type === 'image') return imagePart(part, hints);
  if (hints.partType === 'refusal') return withExtras({ type: 'refusal', refusal: part.text }, hints.extra);
  const type =
    hints.partType === 'input_text' || hints.partType === 'output_text'
      ? hints.partType
      : defaultTextType(role);
  return withExtras({ type, text: part.text }, hints.extra);
}

function imagePart(part: ImagePart, hints: JsonRecord): ResponseInputImage {
  const nulls = Array.isArray(hints.nulls) ? hints.nulls : [];
  const fileId =
    part.source === 'file-id' ? part.ref : typeof hints.file_id === 'string' ? hints.file_id : undefined;
  const image: ResponseInputImage = {
    type: 'input_image',
    ...(part.source !== 'file-id'
      ? { image_url: part.ref }
      : nulls.includes('image_url')
        ? { image_url: null }
        : {}),
    ...(fileId !== undefined ? { file_id: fileId } : nulls.includes('file_id') ? { file_id: null } : {}),
    ...(typeof hints.detail === 'string' ? { detail: hints.detail } : {}),
  };
  return withExtras(image, hints.extra);
}

function reasoningItem(part: ReasoningPart, emit: Emit): ResponseReasoningItem {
  const hints = readSlice(part, NAMESPACE);
  if (part.signature !== undefined) {
    emit({
      code: 'reasoning-metadata-dropped',
      message: 'a reasoning signature has no OpenAI Responses field',
    });
  }
  if (typeof hints.id !== 'string' && hints.idAbsent !== true) {
    emit({
      code: 'reasoning-without-id',
      message: 'a reasoning item without an id may be refused by the API',
    });
  }
  const summary = splitSummary(part.text, hints.summary).map((text) => ({
    type: 'summary_text' as const,
    text,
  }));
  const encrypted = part.redactedData ?? (hints.encrypted_content === null ? null : undefined);
  const item: ResponseReasoningItem = {
    type: 'reasoning',
    ...(typeof hints.id === 'string' ? { id: hints.id } : {}),
    summary,
    ...(Array.isArray(hints.content) || hints.content === null
      ? { content: hints.content as ResponseReasoningItem['content'] }
      : {}),
    ...(encrypted !== undefined ? { encrypted_content: encrypted } : {}),
    ...(typeof hints.status === 'string' ? { status: hints.status } : {}),
  };
  return withExtras(item, hints.extra);
}

/** The call item a tool-call part came as: a function call unless it remembers another kind. */
function toolCallItem(part: ToolCallPart): ResponseInputItem {
  const hints = readSlice(part, NAMESPACE);
  const id = typeof hints.id === 'string' ? { id: hints.id } : {};
  const status = typeof hints.status === 'string' ? { status: hints.status } : {};
  if (hints.item === 'custom_tool_call') {
    const item: ResponseCustomToolCallItem = {
      type: 'custom_tool_call',
      ...id,
      ...status,
      call_id: part.id,
      name: part.name,
      input: part.arguments,
    };
    return withExtras(item, hints.extra);
  }
  const action = hints.item === 'local_shell_call' ? shellAction(part.arguments) : undefined;
  if (action) {
    // Codex's order: the status before the action.
    const item: ResponseLocalShellCallItem = {
      type: 'local_shell_call',
      ...id,
      call_id: part.id,
      ...status,
      action,
    };
    return withExtras(item, hints.extra);
  }
  const item: ResponseFunctionCallItem = {
    type: 'function_call',
    ...id,
    call_id: part.id,
    name: part.name,
    arguments: part.arguments,
    ...status,
  };
  return withExtras(item, hints.extra);
}

/** A shell call's action back from its arguments, or undefined when they are no longer one. */
function shellAction(args: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(args);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function toolItems(message: Message, emit: Emit): ResponseInputItem[] {
  return message.parts.map((part) => {
    if (part.type === 'tool-result') return outputItem(part, emit);
    return opaqueItem(part) ?? messageItem('user', 'user', [placeholder(part, emit)], {});
  });
}

/** The output item a tool-result part came as: a function call output unless it remembers another. */
function outputItem(part: ToolResultPart, emit: Emit): ResponseInputItem {
  const hints = readSlice(part, NAMESPACE);
  if (part.isError === true) {
    emit({
      code: 'tool-error-flag-dropped',
      message: `tool result ${part.callId}: Responses has no error flag`,
    });
  }
  const status = typeof hints.status === 'string' || hints.status === null ? { status: hints.status } : {};
  if (hints.item === 'local_shell_call_output') {
    const item: ResponseLocalShellCallOutputItem = {
      type: 'local_shell_call_output',
      id: part.callId,
      output: typeof part.content === 'string' ? part.content : textOfParts(part.content),
      ...status,
    };
    return withExtras(item, hints.extra);
  }
  const output: ResponseFunctionCallOutputItem['output'] =
    typeof part.content === 'string' ? part.content : part.content.map((inner) => outputPart(inner, emit));
  const item = {
    type: hints.item === 'custom_tool_call_output' ? 'custom_tool_call_output' : 'function_call_output',
    ...(typeof hints.id === 'string' || hints.id === null ? { id: hints.id } : {}),
    call_id: part.callId,
    output,
    ...status,
  } as const;
  return withExtras(item, hints.extra);
}

function outputPart(part: ContentPart, emit: Emit): ResponseOutputContentPart {
  if (part.type === 'image') return imagePart(part, readSlice(part, NAMESPACE));
  const own = part.type === 'opaque' ? ownOpaqueData(part, NAMESPACE) : undefined;
  if (own) return own as ResponseOpaque;
  return textPart(part.type === 'text' ? part : placeholder(part, emit));
}

function textPart(part: TextPart): { type: 'input_text'; text: string } {
  return withExtras({ type: 'input_text', text: part.text }, readSlice(part, NAMESPACE).extra);
}

/** A part the target cannot hold, said out loud as text. */
function placeholder(part: Part, emit: Emit): TextPart {
  return placeholderText(part, emit, 'in OpenAI Responses');
}
