import type {
  ImagePart,
  Message,
  Part,
  ReasoningPart,
  Role,
  TextPart,
  ToolCallPart,
  ToolResultPart,
  Warning,
} from '../../core/transcript.js';
import { type Emit, placeholderText } from '../placeholder-text.js';
import { isRecord, type JsonRecord, readSlice, withExtras } from '../provider-data.js';
import type {
  ResponseFunctionCallItem,
  ResponseFunctionCallOutputItem,
  ResponseInputImage,
  ResponseInputItem,
  ResponseMessageContentPart,
  ResponseMessageItem,
  ResponseReasoningItem,
} from './openai-responses-api.js';
import { defaultContentShape, defaultTextType, NAMESPACE, splitSummary } from './responses-hints.js';

/**
 * Canonical transcript to OpenAI Responses input items; the exact inverse of
 * `fromOpenAIResponses` for transcripts it produced. Lossy cases push a warning:
 * `reasoning-metadata-dropped` (a signature has no Responses field), `reasoning-without-id`
 * (the API may refuse a reasoning item it did not issue), `tool-error-flag-dropped`,
 * `unsupported-part` (a part the role cannot hold becomes a text placeholder) and
 * `empty-content` (an assistant message with no parts yields no item).
 */
export function toOpenAIResponses(messages: Message[]): {
  messages: ResponseInputItem[];
  warnings: Warning[];
} {
  const items: ResponseInputItem[] = [];
  const warnings: Warning[] = [];
  messages.forEach((message, messageIndex) => {
    const emit: Emit = (warning) => warnings.push({ ...warning, messageIndex });
    if (message.role === 'assistant') items.push(...assistantItems(message, emit));
    else if (message.role === 'tool') items.push(...toolItems(message, emit));
    else {
      const parts = message.parts.map((part) =>
        part.type === 'text' || part.type === 'image' ? part : placeholder(part, emit),
      );
      const hints = readSlice(message, NAMESPACE);
      const role = message.role === 'system' && hints.role === 'developer' ? 'developer' : message.role;
      items.push(messageItem(role, message.role, parts, hints));
    }
  });
  return { messages: items, warnings };
}

function assistantItems(message: Message, emit: Emit): ResponseInputItem[] {
  if (message.parts.length === 0)
    emit({ code: 'empty-content', message: 'an assistant message with no parts yields no item' });
  const items: ResponseInputItem[] = [];
  let run: { parts: TextPart[]; hints: JsonRecord } | undefined;
  const flush = () => {
    if (run) items.push(messageItem('assistant', 'assistant', run.parts, run.hints));
    run = undefined;
  };
  for (const part of message.parts) {
    if (part.type === 'reasoning' || part.type === 'tool-call') {
      flush();
      items.push(part.type === 'reasoning' ? reasoningItem(part, emit) : functionCallItem(part));
      continue;
    }
    const text = part.type === 'text' ? part : placeholder(part, emit);
    const itemHints = readSlice(text, NAMESPACE).message;
    if (isRecord(itemHints)) flush();
    run ??= { parts: [], hints: isRecord(itemHints) ? itemHints : {} };
    if (run.hints.content !== 'empty') run.parts.push(text);
  }
  flush();
  return items;
}

function messageItem(
  role: ResponseMessageItem['role'],
  canonicalRole: Role,
  parts: ReadonlyArray<TextPart | ImagePart>,
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

function contentPart(part: TextPart | ImagePart, role: Role): ResponseMessageContentPart {
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
  if (typeof hints.id !== 'string') {
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
    ...(Array.isArray(hints.content) ? { content: hints.content as ResponseReasoningItem['content'] } : {}),
    ...(encrypted !== undefined ? { encrypted_content: encrypted } : {}),
    ...(typeof hints.status === 'string' ? { status: hints.status } : {}),
  };
  return withExtras(item, hints.extra);
}

function functionCallItem(part: ToolCallPart): ResponseFunctionCallItem {
  const hints = readSlice(part, NAMESPACE);
  const item: ResponseFunctionCallItem = {
    type: 'function_call',
    ...(typeof hints.id === 'string' ? { id: hints.id } : {}),
    call_id: part.id,
    name: part.name,
    arguments: part.arguments,
    ...(typeof hints.status === 'string' ? { status: hints.status } : {}),
  };
  return withExtras(item, hints.extra);
}

function toolItems(message: Message, emit: Emit): ResponseInputItem[] {
  return message.parts.map((part) =>
    part.type === 'tool-result'
      ? functionCallOutputItem(part, emit)
      : messageItem('user', 'user', [placeholder(part, emit)], {}),
  );
}

function functionCallOutputItem(part: ToolResultPart, emit: Emit): ResponseFunctionCallOutputItem {
  const hints = readSlice(part, NAMESPACE);
  if (part.isError === true) {
    emit({
      code: 'tool-error-flag-dropped',
      message: `tool result ${part.callId}: Responses has no error flag`,
    });
  }
  const output: ResponseFunctionCallOutputItem['output'] =
    typeof part.content === 'string'
      ? part.content
      : part.content.map((inner) =>
          inner.type === 'image' ? imagePart(inner, readSlice(inner, NAMESPACE)) : textPart(inner),
        );
  const item: ResponseFunctionCallOutputItem = {
    type: 'function_call_output',
    ...(typeof hints.id === 'string' || hints.id === null ? { id: hints.id } : {}),
    call_id: part.callId,
    output,
    ...(typeof hints.status === 'string' || hints.status === null ? { status: hints.status } : {}),
  };
  return withExtras(item, hints.extra);
}

function textPart(part: TextPart): { type: 'input_text'; text: string } {
  return withExtras({ type: 'input_text', text: part.text }, readSlice(part, NAMESPACE).extra);
}

/** A part the target cannot hold, said out loud as text. */
function placeholder(part: Part, emit: Emit): TextPart {
  return placeholderText(part, emit, 'in OpenAI Responses');
}
