import { BadInputError } from '../../core/errors.js';
import type { ImagePart, Message, Part, Role, TextPart, Warning } from '../../core/transcript.js';
import { parseDataUri } from '../data-uri.js';
import { extrasOf, readSlice, sliceProviderData } from '../provider-data.js';
import { validateMessage } from '../validate-messages.js';
import {
  itemSchema,
  type ResponseFunctionCallOutputItem,
  type ResponseInputImage,
  type ResponseInputItem,
  type ResponseMessageContentPart,
  type ResponseMessageItem,
  type ResponseReasoningItem,
} from './openai-responses-api.js';
import {
  defaultContentShape,
  defaultTextType,
  NAMESPACE,
  SUMMARY_SEPARATOR,
  summaryLengths,
} from './responses-hints.js';

const LABEL = 'openai-responses item';

/**
 * OpenAI Responses input items to the canonical transcript. A run of assistant-side items
 * (reasoning, assistant message, function_call) becomes one assistant message whose parts keep
 * the item order; item-level details ride on the parts (`providerData.openaiResponses.message`
 * marks the first part of each assistant message item). Each `function_call_output` becomes one
 * tool message. Lossless: `toOpenAIResponses` writes the items back byte for byte.
 *
 * @throws BadInputError naming the item index for a malformed or unsupported item.
 */
export function fromOpenAIResponses(input: ResponseInputItem[]): {
  messages: Message[];
  warnings: Warning[];
} {
  if (!Array.isArray(input)) throw new BadInputError(`${LABEL}s: expected an array`);
  const messages: Message[] = [];
  const toolNames = new Map<string, string>();
  let assistant: Message | undefined;
  input.forEach((raw, index) => {
    const item = validateItem(raw, index);
    if (
      item.type === 'function_call' ||
      item.type === 'reasoning' ||
      (isMessage(item) && item.role === 'assistant')
    ) {
      if (!assistant) {
        assistant = { role: 'assistant', parts: [] };
        messages.push(assistant);
      }
      assistant.parts.push(...assistantParts(item, toolNames));
      return;
    }
    assistant = undefined;
    messages.push(item.type === 'function_call_output' ? toolMessage(item, toolNames) : inputMessage(item));
  });
  return { messages, warnings: [] };
}

function validateItem(raw: unknown, index: number): ResponseInputItem {
  const schema = itemSchema(raw);
  if (!schema) {
    const type = JSON.stringify((raw as { type?: unknown } | null)?.type);
    throw new BadInputError(`${LABEL} ${index}: unsupported item type ${type}`, { messageIndex: index });
  }
  return validateMessage(raw, schema, LABEL, index);
}

function isMessage(item: ResponseInputItem): item is ResponseMessageItem {
  return item.type === undefined || item.type === 'message';
}

/** Item-level details of a message item that the canonical message cannot say. */
function messageHints(item: ResponseMessageItem, parts: ReadonlyArray<TextPart | ImagePart>) {
  const shape = typeof item.content === 'string' ? 'string' : 'array';
  return {
    typed: item.type === 'message' ? true : undefined,
    id: item.id,
    status: item.status,
    phase: item.phase,
    content: shape === defaultContentShape(parts) ? undefined : shape,
    extra: extrasOf(item, ['type', 'id', 'role', 'content', 'status', 'phase']),
  };
}

function inputMessage(item: ResponseMessageItem): Message {
  const role: Role = item.role === 'developer' ? 'system' : (item.role as Role);
  const parts = contentParts(item.content, role);
  const developer = item.role === 'developer' ? 'developer' : undefined;
  return { role, parts, ...sliceProviderData(NAMESPACE, { role: developer, ...messageHints(item, parts) }) };
}

function assistantParts(item: ResponseInputItem, toolNames: Map<string, string>): Part[] {
  if (isMessage(item)) return assistantMessageParts(item);
  if (item.type === 'reasoning') return [reasoningPart(item)];
  if (item.type !== 'function_call') return [];
  toolNames.set(item.call_id, item.name);
  const extra = extrasOf(item, ['type', 'id', 'call_id', 'name', 'arguments', 'status']);
  const hints = sliceProviderData(NAMESPACE, { id: item.id, status: item.status, extra });
  return [{ type: 'tool-call', id: item.call_id, name: item.name, arguments: item.arguments, ...hints }];
}

/** The item's parts, the first one marked with the item's own details so the item can be rebuilt. */
function assistantMessageParts(item: ResponseMessageItem): Part[] {
  const parts = contentParts(item.content, 'assistant');
  const hints = dropUndefined(messageHints(item, parts));
  const [first, ...rest] = parts;
  if (!first)
    return [
      {
        type: 'text',
        text: '',
        ...sliceProviderData(NAMESPACE, { message: { ...hints, content: 'empty' } }),
      },
    ];
  const firstSlice = { ...readSlice(first, NAMESPACE), message: hints };
  return [{ ...first, providerData: { [NAMESPACE]: firstSlice } }, ...rest];
}

function reasoningPart(item: ResponseReasoningItem): Part {
  const summary = item.summary.map((entry) => entry.text);
  const hints = {
    id: item.id,
    summary: summaryLengths(summary),
    content: item.content,
    encrypted_content: item.encrypted_content === null ? null : undefined,
    status: item.status,
    extra: extrasOf(item, ['type', 'id', 'summary', 'content', 'encrypted_content', 'status']),
  };
  const redacted = typeof item.encrypted_content === 'string' ? { redactedData: item.encrypted_content } : {};
  return {
    type: 'reasoning',
    text: summary.join(SUMMARY_SEPARATOR),
    ...redacted,
    ...sliceProviderData(NAMESPACE, hints),
  };
}

function toolMessage(item: ResponseFunctionCallOutputItem, toolNames: Map<string, string>): Message {
  const content =
    typeof item.output === 'string' ? item.output : item.output.map((part) => contentPart(part, 'tool'));
  const extra = extrasOf(item, ['type', 'id', 'call_id', 'output', 'status']);
  const hints = sliceProviderData(NAMESPACE, { id: item.id, status: item.status, extra });
  const name = toolNames.get(item.call_id) ?? '';
  return { role: 'tool', parts: [{ type: 'tool-result', callId: item.call_id, name, content, ...hints }] };
}

function contentParts(content: ResponseMessageItem['content'], role: Role): Array<TextPart | ImagePart> {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part) => contentPart(part, role));
}

function contentPart(part: ResponseMessageContentPart, role: Role): TextPart | ImagePart {
  switch (part.type) {
    case 'input_text':
    case 'output_text': {
      const partType = part.type === defaultTextType(role) ? undefined : part.type;
      const extra = extrasOf(part, ['type', 'text']);
      return { type: 'text', text: part.text, ...sliceProviderData(NAMESPACE, { partType, extra }) };
    }
    case 'refusal': {
      const extra = extrasOf(part, ['type', 'refusal']);
      return {
        type: 'text',
        text: part.refusal,
        ...sliceProviderData(NAMESPACE, { partType: 'refusal', extra }),
      };
    }
    case 'input_image':
      return imagePart(part);
  }
}

function imagePart(part: ResponseInputImage): ImagePart {
  const nulls = (['image_url', 'file_id'] as const).filter((key) => part[key] === null);
  const extra = extrasOf(part, ['type', 'image_url', 'file_id', 'detail']);
  const bothIds = typeof part.image_url === 'string' && typeof part.file_id === 'string';
  const nullKeys = nulls.length > 0 ? nulls : undefined;
  const hints = sliceProviderData(NAMESPACE, {
    detail: part.detail,
    nulls: nullKeys,
    file_id: bothIds ? part.file_id : undefined,
    extra,
  });
  if (typeof part.image_url === 'string') {
    const dataUri = part.image_url.startsWith('data:') ? parseDataUri(part.image_url) : undefined;
    const mediaType = dataUri && dataUri.mediaType !== '' ? { mediaType: dataUri.mediaType } : {};
    return { type: 'image', ref: part.image_url, source: dataUri ? 'data' : 'url', ...mediaType, ...hints };
  }
  return { type: 'image', ref: part.file_id ?? '', source: 'file-id', ...hints };
}

function dropUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}
