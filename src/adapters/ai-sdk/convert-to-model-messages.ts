import type {
  ImagePart,
  Message,
  Part,
  ReasoningPart,
  TextPart,
  ToolCallPart,
  ToolResultPart,
  Warning,
} from '../../core/transcript.js';
import { parseDataUri } from '../data-uri.js';
import { ownOpaqueData } from '../opaque-part.js';
import { type Emit, placeholderText } from '../placeholder-text.js';
import { isRecord, type JsonRecord, readSlice, withExtras } from '../provider-data.js';
import type {
  AssistantModelMessage,
  ModelFilePart,
  ModelImagePart,
  ModelMessage,
  ModelOpaquePart,
  ModelProviderOptions,
  ModelReasoningPart,
  ModelTextPart,
  ModelToolCallPart,
  ModelToolResultContentItem,
  ModelToolResultOutput,
  ModelToolResultPart,
  UserModelMessage,
} from './ai-sdk-api.js';
import { writeDataContent } from './data-content.js';
import { ARGUMENTS_OPTION, inputOf, NAMESPACE } from './tool-arguments.js';

/**
 * Canonical transcript to AI SDK `ModelMessage`s; the exact inverse of `fromModelMessages` for
 * transcripts it produced. A system message with several text parts (Anthropic system blocks)
 * is written as their text joined by newlines, since AI SDK system content is one string. Consecutive tool messages merge into one tool message unless they
 * remember different wire messages. Lossy cases push a warning: `malformed-tool-arguments`
 * (text that is not JSON is sent as the `input` string), `tool-error-flag-dropped` (a failed
 * result with text-and-image content has no error form), `unsupported-part` (a part the role
 * cannot hold becomes a text placeholder).
 */
export function toModelMessages(messages: Message[]): { messages: ModelMessage[]; warnings: Warning[] } {
  const out: ModelMessage[] = [];
  const warnings: Warning[] = [];
  let tool: { message: ModelMessage & { role: 'tool' }; turn: unknown } | undefined;
  messages.forEach((message, messageIndex) => {
    const emit: Emit = (warning) => warnings.push({ ...warning, messageIndex });
    const hints = readSlice(message, NAMESPACE);
    if (message.role !== 'tool') tool = undefined;
    if (message.role === 'system') {
      const text = message.parts
        .map((part) => (part.type === 'text' ? part : placeholder(part, emit)).text)
        .join('\n');
      out.push(withMessageHints({ role: 'system', content: text }, hints));
    } else if (message.role === 'user') {
      const parts = message.parts.map(
        (part) =>
          ownPart(part) ?? (part.type === 'image' ? mediaPart(part, emit) : textPart(asText(part, emit))),
      );
      out.push(
        withMessageHints(
          { role: 'user', content: stringOr(parts, hints) as UserModelMessage['content'] },
          hints,
        ),
      );
    } else if (message.role === 'assistant') {
      const parts = message.parts.map((part) => ownPart(part) ?? assistantPart(part, emit));
      out.push(
        withMessageHints(
          { role: 'assistant', content: stringOr(parts, hints) as AssistantModelMessage['content'] },
          hints,
        ),
      );
    } else {
      const turn = hints.turn;
      if (!tool || (tool.turn !== undefined && turn !== undefined && tool.turn !== turn)) {
        tool = { message: withMessageHints({ role: 'tool', content: [] }, hints), turn };
        out.push(tool.message);
      }
      tool.turn ??= turn;
      for (const part of message.parts) {
        const own = ownPart(part);
        if (own !== undefined) tool.message.content.push(own as ModelToolResultPart);
        else if (part.type === 'tool-result') tool.message.content.push(toolResultPart(part, emit));
        else out.push({ role: 'user', content: [textPart(placeholder(part, emit))] });
      }
    }
  });
  return { messages: out, warnings };
}

/** A part this adapter read and kept whole, as it came (`fromModelMessages`' opaque parts). */
function ownPart(part: Part): ModelOpaquePart | undefined {
  return part.type === 'opaque' ? (ownOpaqueData(part, NAMESPACE) as ModelOpaquePart | undefined) : undefined;
}

function withMessageHints<M extends ModelMessage>(message: M, hints: JsonRecord): M {
  const providerOptions = isRecord(hints.providerOptions)
    ? { providerOptions: hints.providerOptions as ModelProviderOptions }
    : {};
  return withExtras({ ...message, ...providerOptions }, hints.extra);
}

/** The remembered string form, when the content is still one plain text part. */
function stringOr<P extends { type: string }>(parts: P[], hints: JsonRecord): string | P[] {
  const [only] = parts;
  const plain = only?.type === 'text' && Object.keys(only).length === 2;
  return hints.content === 'string' && parts.length === 1 && plain
    ? (only as unknown as ModelTextPart).text
    : parts;
}

function withPartHints<P extends object>(part: P, hints: JsonRecord): P {
  const providerOptions = isRecord(hints.providerOptions)
    ? { providerOptions: hints.providerOptions as ModelProviderOptions }
    : {};
  return withExtras({ ...part, ...providerOptions }, hints.extra);
}

function asText(part: Part, emit: Emit): TextPart {
  return part.type === 'text' ? part : placeholder(part, emit);
}

function textPart(part: TextPart): ModelTextPart {
  return withPartHints({ type: 'text', text: part.text }, readSlice(part, NAMESPACE));
}

function assistantPart(part: Part, emit: Emit): AssistantModelMessage['content'][number] & object {
  switch (part.type) {
    case 'text':
      return textPart(part);
    case 'reasoning':
      return reasoningPart(part);
    case 'tool-call':
      return toolCallPart(part, emit);
    case 'image': {
      const media = mediaPart(part, emit);
      return media.type === 'file' ? media : textPart(placeholder(part, emit));
    }
    default:
      return textPart(placeholder(part, emit));
  }
}

function mediaPart(part: ImagePart, emit: Emit): ModelImagePart | ModelFilePart | ModelTextPart {
  if (part.source === 'file-id') return textPart(placeholder(part, emit));
  const hints = readSlice(part, NAMESPACE);
  const data = writeDataContent(part, hints.form);
  const mediaType =
    hints.noMediaType === true ? undefined : (part.mediaType ?? parseDataUri(part.ref)?.mediaType);
  if (hints.part === 'file') {
    const filename = typeof hints.filename === 'string' ? { filename: hints.filename } : {};
    return withPartHints(
      { type: 'file', data, ...filename, mediaType: mediaType ?? 'application/octet-stream' },
      hints,
    );
  }
  return withPartHints({ type: 'image', image: data, ...(mediaType ? { mediaType } : {}) }, hints);
}

function reasoningPart(part: ReasoningPart): ModelReasoningPart {
  const hints = readSlice(part, NAMESPACE);
  const stored = isRecord(hints.providerOptions)
    ? (hints.providerOptions as ModelProviderOptions)
    : undefined;
  const anthropic: JsonRecord = { ...stored?.anthropic };
  if (part.signature !== undefined) anthropic.signature = part.signature;
  if (part.redactedData !== undefined) anthropic.redactedData = part.redactedData;
  const providerOptions = Object.keys(anthropic).length > 0 ? { ...stored, anthropic } : stored;
  return withExtras(
    { type: 'reasoning', text: part.text, ...(providerOptions ? { providerOptions } : {}) },
    hints.extra,
  );
}

function toolCallPart(part: ToolCallPart, emit: Emit): ModelToolCallPart {
  const hints = readSlice(part, NAMESPACE);
  const { input, remember, malformed } = inputOf(part.arguments);
  if (malformed)
    emit({
      code: 'malformed-tool-arguments',
      message: `tool call ${part.id}: arguments are not JSON; sent as text`,
    });
  let providerOptions = isRecord(hints.providerOptions)
    ? (hints.providerOptions as ModelProviderOptions)
    : undefined;
  if (remember) providerOptions = { ...providerOptions, [ARGUMENTS_OPTION]: { arguments: part.arguments } };
  const call: ModelToolCallPart = {
    type: 'tool-call',
    toolCallId: part.id,
    toolName: part.name,
    input: input as ModelToolCallPart['input'],
    ...(typeof hints.providerExecuted === 'boolean' ? { providerExecuted: hints.providerExecuted } : {}),
    ...(providerOptions ? { providerOptions } : {}),
  };
  return withExtras(call, hints.extra);
}

function toolResultPart(part: ToolResultPart, emit: Emit): ModelToolResultPart {
  const hints = readSlice(part, NAMESPACE);
  if (part.isError === true && typeof part.content !== 'string') {
    emit({
      code: 'tool-error-flag-dropped',
      message: `tool result ${part.callId}: a content output has no error form`,
    });
  }
  const outputOptions = isRecord(hints.outputProviderOptions)
    ? { providerOptions: hints.outputProviderOptions as ModelProviderOptions }
    : {};
  const output = withExtras(
    { ...toolOutput(part, hints, emit), ...outputOptions },
    hints.outputExtra,
  ) as ModelToolResultOutput;
  return withPartHints({ type: 'tool-result', toolCallId: part.callId, toolName: part.name, output }, hints);
}

function toolOutput(part: ToolResultPart, hints: JsonRecord, emit: Emit): ModelToolResultOutput {
  const { content } = part;
  if (typeof content !== 'string') {
    const value = content.map((inner) =>
      contentItem(inner.type === 'opaque' ? placeholder(inner, emit) : inner),
    );
    return { type: 'content', value };
  }
  if (hints.output === 'execution-denied')
    return {
      type: 'execution-denied',
      ...(hints.reasonAbsent === true && content === '' ? {} : { reason: content }),
    };
  if (hints.output === 'json' || hints.output === 'error-json') {
    const parsed = inputOf(content);
    if (!parsed.malformed && !parsed.remember) return { type: hints.output, value: parsed.input as never };
  }
  return part.isError === true ? { type: 'error-text', value: content } : { type: 'text', value: content };
}

function contentItem(part: TextPart | ImagePart): ModelToolResultContentItem {
  return withExtras(contentItemFields(part), readSlice(part, NAMESPACE).extra);
}

/** A content item's fields the adapter reads (`contentItem` adds the others it kept). */
function contentItemFields(part: TextPart | ImagePart): ModelToolResultContentItem {
  const hints = readSlice(part, NAMESPACE);
  const options = isRecord(hints.providerOptions)
    ? { providerOptions: hints.providerOptions as ModelProviderOptions }
    : {};
  if (part.type === 'text') return { type: 'text', text: part.text, ...options };
  if (part.source === 'url') {
    if (hints.kind !== 'file-url') return { type: 'image-url', url: part.ref, ...options };
    return {
      type: 'file-url',
      url: part.ref,
      ...(part.mediaType ? { mediaType: part.mediaType } : {}),
      ...options,
    };
  }
  if (part.source === 'file-id')
    return { type: hints.kind === 'file-id' ? 'file-id' : 'image-file-id', fileId: part.ref, ...options };
  const uri = parseDataUri(part.ref);
  const data = uri?.data ?? part.ref;
  const mediaType = uri?.mediaType || (part.mediaType ?? '');
  if (hints.kind === 'media') return { type: 'media', data, mediaType };
  if (hints.kind !== 'file-data') return { type: 'image-data', data, mediaType, ...options };
  const filename = typeof hints.filename === 'string' ? { filename: hints.filename } : {};
  return { type: 'file-data', data, mediaType, ...filename, ...options };
}

/** A part the target cannot hold, said out loud as text. */
function placeholder(part: Part, emit: Emit): TextPart {
  return placeholderText(part, emit, 'in AI SDK messages');
}
