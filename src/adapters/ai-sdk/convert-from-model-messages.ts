import { BadInputError } from '../../core/errors.js';
import type { ImagePart, Message, Part, TextPart, Warning } from '../../core/transcript.js';
import { buildBase64DataUri } from '../data-uri.js';
import { opaquePart } from '../opaque-part.js';
import { extrasOf, type JsonRecord, sliceProviderData } from '../provider-data.js';
import { validateMessages } from '../validate-messages.js';
import {
  ASSISTANT_PART_TYPES,
  type ModelFilePart,
  type ModelImagePart,
  ModelMessage,
  type ModelOpaquePart,
  type ModelReasoningPart,
  type ModelTextPart,
  type ModelToolCallPart,
  type ModelToolResultContentItem,
  ModelToolResultOutput,
  type ModelToolResultPart,
  TOOL_PART_TYPES,
  USER_PART_TYPES,
} from './ai-sdk-api.js';
import { readDataContent } from './data-content.js';
import { ARGUMENTS_OPTION, isJsonText, NAMESPACE, sameJson } from './tool-arguments.js';

const PART_KEYS = ['type', 'text', 'image', 'data', 'filename', 'mediaType', 'providerOptions'];

/**
 * AI SDK `ModelMessage`s to the canonical transcript. Tool-call `input` becomes its JSON text
 * (or, when `toModelMessages` left the original text in `providerOptions.selfGc.arguments`,
 * that text). Each tool result becomes one canonical tool message; results of one wire tool
 * message remember its index (`providerData.aiSdk.turn`). Tool outputs become text (`json`
 * values as JSON text, `error-*` with `isError`) or a list of text and image parts. A part its role
 * is not read by (a tool approval, a provider-executed call and its result in the assistant
 * message) is an opaque part, in place. Lossless.
 *
 * @throws BadInputError naming the message index for a malformed or unsupported message.
 */
export function fromModelMessages(input: ModelMessage[]): { messages: Message[]; warnings: Warning[] } {
  const wire = validateMessages(input, ModelMessage, 'ai-sdk message');
  const out: Message[] = [];
  wire.forEach((message, turn) => {
    const base = {
      providerOptions: message.providerOptions,
      extra: extrasOf(message, ['role', 'content', 'providerOptions']),
    };
    if (message.role === 'tool') {
      const hints = sliceProviderData(NAMESPACE, { ...base, turn });
      out.push(
        ...message.content.map(
          (part): Message => ({
            role: 'tool',
            parts: [
              TOOL_PART_TYPES.has(part.type) ? toolResult(part as ModelToolResultPart, turn) : opaque(part),
            ],
            ...hints,
          }),
        ),
      );
      if (message.content.length === 0) out.push({ role: 'tool', parts: [], ...hints });
      return;
    }
    const shape = typeof message.content === 'string' && message.role !== 'system' ? 'string' : undefined;
    const read = message.role === 'assistant' ? ASSISTANT_PART_TYPES : USER_PART_TYPES;
    const parts =
      typeof message.content === 'string'
        ? [{ type: 'text' as const, text: message.content }]
        : message.content.map((part) => {
            // A provider-executed call is answered in this message, by a result kept whole: the
            // pair is the provider's, like a server tool's (nothing pairs, renames or splits it).
            const providers = part.type === 'tool-call' && part.providerExecuted === true;
            if (!read.has(part.type) || providers) return opaque(part as unknown as ModelOpaquePart);
            return part.type === 'tool-call'
              ? toolCall(part as ModelToolCallPart, turn)
              : contentPart(part as ModelTextPart | ModelImagePart | ModelFilePart | ModelReasoningPart);
          });
    out.push({ role: message.role, parts, ...sliceProviderData(NAMESPACE, { ...base, content: shape }) });
  });
  return { messages: out, warnings: [] };
}

/**
 * A part the role is not read by, kept whole: a tool approval, a provider-executed tool's call
 * and its result in the assistant message, a part type of a later SDK. A result counts what its
 * output holds, as the model reads it.
 */
function opaque(part: ModelOpaquePart): Part {
  const output = part.type === 'tool-result' ? ModelToolResultOutput.safeParse(part.output) : undefined;
  return output?.success === true
    ? opaquePart(NAMESPACE, part, outputText(output.data))
    : opaquePart(NAMESPACE, part);
}

/** What a tool output shows the model, as text. */
function outputText(output: ModelToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value) ?? '';
    case 'execution-denied':
      return output.reason ?? '';
    case 'content':
      return output.value.map((item) => (item.type === 'text' ? item.text : `[${item.type}]`)).join('\n');
  }
}

function contentPart(part: ModelTextPart | ModelImagePart | ModelFilePart | ModelReasoningPart): Part {
  const hints = { providerOptions: part.providerOptions, extra: extrasOf(part, PART_KEYS) };
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, ...sliceProviderData(NAMESPACE, hints) };
    case 'reasoning': {
      const anthropic = part.providerOptions?.anthropic;
      const signature = typeof anthropic?.signature === 'string' ? { signature: anthropic.signature } : {};
      const redacted =
        typeof anthropic?.redactedData === 'string' ? { redactedData: anthropic.redactedData } : {};
      return {
        type: 'reasoning',
        text: part.text,
        ...signature,
        ...redacted,
        ...sliceProviderData(NAMESPACE, hints),
      };
    }
    case 'image':
    case 'file': {
      const { form, ...image } = readDataContent(
        part.type === 'image' ? part.image : part.data,
        part.mediaType,
      );
      const file = part.type === 'file' ? { part: 'file', filename: part.filename } : {};
      const noMediaType = part.mediaType === undefined && image.mediaType !== undefined ? true : undefined;
      return {
        type: 'image',
        ...image,
        ...sliceProviderData(NAMESPACE, { ...hints, ...file, form, noMediaType }),
      };
    }
  }
}

function toolCall(part: ModelToolCallPart, turn: number): Part {
  const { [ARGUMENTS_OPTION]: remembered, ...rest } = part.providerOptions ?? {};
  const original = remembered?.arguments;
  let args: string;
  if (typeof original === 'string' && sameJson(original, part.input)) args = original;
  else if (typeof part.input === 'string' && !isJsonText(part.input)) args = part.input;
  else args = stringify(part.input, turn);
  const onlyRemembered = remembered !== undefined && Object.keys(rest).length === 0;
  const hints = {
    providerOptions: part.providerOptions === undefined || onlyRemembered ? undefined : rest,
    providerExecuted: part.providerExecuted,
    extra: extrasOf(part, ['type', 'toolCallId', 'toolName', 'input', 'providerExecuted', 'providerOptions']),
  };
  return {
    type: 'tool-call',
    id: part.toolCallId,
    name: part.toolName,
    arguments: args,
    ...sliceProviderData(NAMESPACE, hints),
  };
}

function stringify(value: unknown, turn: number): string {
  try {
    const text = JSON.stringify(value);
    if (typeof text === 'string') return text;
  } catch {
    // reported below
  }
  throw new BadInputError(`ai-sdk message ${turn}: value is not JSON-serialisable`, { messageIndex: turn });
}

function toolResult(part: ModelToolResultPart, turn: number): Part {
  const { output } = part;
  const common = { type: 'tool-result' as const, callId: part.toolCallId, name: part.toolName };
  const hints: JsonRecord = {
    providerOptions: part.providerOptions,
    outputProviderOptions: output.providerOptions,
    outputExtra: extrasOf(output, OUTPUT_KEYS[output.type]),
    extra: extrasOf(part, ['type', 'toolCallId', 'toolName', 'output', 'providerOptions']),
  };
  switch (output.type) {
    case 'text':
    case 'error-text':
      return {
        ...common,
        content: output.value,
        ...errorFlag(output.type),
        ...sliceProviderData(NAMESPACE, hints),
      };
    case 'json':
    case 'error-json': {
      const content = stringify(output.value, turn);
      return {
        ...common,
        content,
        ...errorFlag(output.type),
        ...sliceProviderData(NAMESPACE, { ...hints, output: output.type }),
      };
    }
    case 'execution-denied': {
      const reasonAbsent = output.reason === undefined ? true : undefined;
      const denied = { ...hints, output: output.type, reasonAbsent };
      return {
        ...common,
        content: output.reason ?? '',
        isError: true,
        ...sliceProviderData(NAMESPACE, denied),
      };
    }
    case 'content':
      return { ...common, content: output.value.map(contentItem), ...sliceProviderData(NAMESPACE, hints) };
  }
}

/** The fields of a tool output the adapter reads, by its type; any other rides along as `extra`. */
const OUTPUT_KEYS: Record<ModelToolResultOutput['type'], string[]> = {
  text: ['type', 'value', 'providerOptions'],
  'error-text': ['type', 'value', 'providerOptions'],
  json: ['type', 'value', 'providerOptions'],
  'error-json': ['type', 'value', 'providerOptions'],
  content: ['type', 'value', 'providerOptions'],
  'execution-denied': ['type', 'reason', 'providerOptions'],
};

/** The fields of a tool output's content item the adapter reads, by its type. */
const ITEM_KEYS: Record<ModelToolResultContentItem['type'], string[]> = {
  text: ['type', 'text', 'providerOptions'],
  media: ['type', 'data', 'mediaType'],
  'image-data': ['type', 'data', 'mediaType', 'providerOptions'],
  'file-data': ['type', 'data', 'mediaType', 'filename', 'providerOptions'],
  'image-url': ['type', 'url', 'providerOptions'],
  'file-url': ['type', 'url', 'mediaType', 'providerOptions'],
  'image-file-id': ['type', 'fileId', 'providerOptions'],
  'file-id': ['type', 'fileId', 'providerOptions'],
};

function errorFlag(type: string): { isError?: true } {
  return type.startsWith('error-') ? { isError: true } : {};
}

function contentItem(item: ModelToolResultContentItem): TextPart | ImagePart {
  const providerOptions = item.type !== 'media' ? item.providerOptions : undefined;
  const extra = extrasOf(item, ITEM_KEYS[item.type]);
  switch (item.type) {
    case 'text':
      return { type: 'text', text: item.text, ...sliceProviderData(NAMESPACE, { providerOptions, extra }) };
    case 'media':
    case 'image-data':
    case 'file-data': {
      const filename = item.type === 'file-data' ? item.filename : undefined;
      const kind = item.type === 'image-data' ? undefined : item.type;
      const hints = sliceProviderData(NAMESPACE, { providerOptions, kind, filename, extra });
      const ref = buildBase64DataUri(item.mediaType, item.data);
      return { type: 'image', ref, source: 'data', mediaType: item.mediaType, ...hints };
    }
    case 'image-url':
    case 'file-url': {
      const mediaType =
        item.type === 'file-url' && item.mediaType !== undefined ? { mediaType: item.mediaType } : {};
      const kind = item.type === 'image-url' ? undefined : item.type;
      return {
        type: 'image',
        ref: item.url,
        source: 'url',
        ...mediaType,
        ...sliceProviderData(NAMESPACE, { providerOptions, kind, extra }),
      };
    }
    case 'image-file-id':
    case 'file-id': {
      const kind = item.type === 'image-file-id' ? undefined : item.type;
      return {
        type: 'image',
        ref: item.fileId,
        source: 'file-id',
        ...sliceProviderData(NAMESPACE, { providerOptions, kind, extra }),
      };
    }
  }
}
