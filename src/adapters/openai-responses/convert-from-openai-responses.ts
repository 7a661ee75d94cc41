import { BadInputError } from '../../core/errors.js';
import type { ImagePart, Message, OpaquePart, Part, Role, TextPart, Warning } from '../../core/transcript.js';
import { parseDataUri } from '../data-uri.js';
import { opaquePart } from '../opaque-part.js';
import { extrasOf, readSlice, sliceProviderData } from '../provider-data.js';
import { type ElementReading, type ReadResume, readBefore, toolNamesOf } from '../read-resume.js';
import { validateMessage } from '../validate-messages.js';
import {
  isReadContent,
  isReadItem,
  itemSchema,
  type ResponseCustomToolCallOutputItem,
  type ResponseFunctionCallOutputItem,
  type ResponseInputImage,
  type ResponseInputItem,
  type ResponseLocalShellCallOutputItem,
  type ResponseMessageContentPart,
  type ResponseMessageItem,
  type ResponseOpaque,
  type ResponseReadItem,
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
 * (reasoning, assistant message, tool calls) becomes one assistant message whose parts keep
 * the item order; item-level details ride on the parts (`providerData.openaiResponses.message`
 * marks the first part of each assistant message item). `custom_tool_call` and
 * `local_shell_call` are tool calls like `function_call` (the item type rides in
 * `providerData.openaiResponses.item`; a shell call's arguments are the JSON text of its
 * `action`, its tool name `local_shell`), and each output item becomes one tool message. Items
 * the adapter does not read are opaque parts: answers to the model's items (types ending in
 * `_output` or `_response`) in a tool message of their own, so they stay after what they answer;
 * the developer's (`additional_tools`) and those holding the state the model continues from
 * (`compaction`, `configuration_update`) in a system message of their own; everything else
 * (`web_search_call`, `item_reference`, ...) in the assistant run.
 * Lossless: `toOpenAIResponses` writes the items back byte for byte.
 *
 * `resume` reads from a later item on, after an earlier reading of the same items before it
 * (see `read-resume.ts`); a run of assistant-side items that reaches the resume point is read
 * again whole, since the items after it may join it.
 *
 * @throws BadInputError naming the item index for a malformed item.
 */
export function fromOpenAIResponses(
  input: ResponseInputItem[],
  resume?: ReadResume,
): { messages: Message[]; warnings: Warning[] } & ElementReading {
  if (!Array.isArray(input)) throw new BadInputError(`${LABEL}s: expected an array`);
  let from = resume?.index ?? 0;
  // The items before `from` passed validation when they were read before.
  while (from > 0 && isAssistantSide(input[from - 1]!)) from -= 1;
  const { messages, ends } = resume === undefined ? { messages: [], ends: [0] } : readBefore(resume, from);
  const toolNames = toolNamesOf(messages);
  let assistant: Message | undefined;
  for (let index = from; index < input.length; index += 1) {
    const item = validateItem(input[index], index);
    if (isAssistantSide(item)) {
      if (!assistant) {
        assistant = { role: 'assistant', parts: [] };
        messages.push(assistant);
      }
      assistant.parts.push(...assistantParts(item, toolNames));
    } else {
      assistant = undefined;
      messages.push(inputSideMessage(item, toolNames));
    }
    ends.push(messages.length);
  }
  return { messages, warnings: [], ends };
}

/** Items the model produced: they join the assistant run. */
function isAssistantSide(item: ResponseInputItem): boolean {
  if (!isReadItem(item)) return !ANSWER_TYPE.test(item.type) && !isInstruction(item);
  return (
    item.type === 'function_call' ||
    item.type === 'custom_tool_call' ||
    item.type === 'local_shell_call' ||
    item.type === 'reasoning' ||
    (isMessage(item) && item.role === 'assistant')
  );
}

/** An item the client sends in answer to one of the model's (`computer_call_output`, `mcp_approval_response`). */
const ANSWER_TYPE = /_(output|response)$/;

/**
 * Items that hold what the model continues from, or a control read where it stands: Codex's
 * compacted history (`compaction`, `compaction_summary`, `context_compaction`, encrypted) and
 * its change of reasoning effort (`configuration_update`). Folded with the work around them, the
 * model would lose the conversation before a compaction, or run at another effort.
 */
const STATE_ITEM_TYPES: ReadonlySet<string> = new Set([
  'compaction',
  'compaction_summary',
  'context_compaction',
  'compaction_trigger',
  'configuration_update',
]);

/**
 * An item the developer gave, not the model (`additional_tools`, role `developer`), or one that
 * holds the state the model continues from (`STATE_ITEM_TYPES`): a system message of its own, so
 * that it is pinned as instructions are and never folded away.
 */
function isInstruction(item: ResponseOpaque): boolean {
  return item.role === 'developer' || item.role === 'system' || STATE_ITEM_TYPES.has(item.type);
}

function inputSideMessage(item: ResponseInputItem, toolNames: Map<string, string>): Message {
  if (!isReadItem(item)) return { role: isInstruction(item) ? 'system' : 'tool', parts: [opaque(item)] };
  switch (item.type) {
    case 'function_call_output':
    case 'custom_tool_call_output':
      return toolMessage(item, toolNames);
    case 'local_shell_call_output':
      return localShellOutputMessage(item);
    default:
      return inputMessage(item as ResponseMessageItem);
  }
}

/** An item kept whole; `level: 'item'` tells it from an opaque content part of a message. */
function opaque(item: ResponseOpaque): OpaquePart {
  return { ...opaquePart(NAMESPACE, item), ...sliceProviderData(NAMESPACE, { level: 'item' }) };
}

function validateItem(raw: unknown, index: number): ResponseInputItem {
  const schema = itemSchema(raw);
  if (!schema) {
    const type = JSON.stringify((raw as { type?: unknown } | null)?.type);
    throw new BadInputError(`${LABEL} ${index}: unsupported item type ${type}`, { messageIndex: index });
  }
  return validateMessage(raw, schema, LABEL, index);
}

function isMessage(item: ResponseReadItem): item is ResponseMessageItem {
  return item.type === undefined || item.type === 'message';
}

/** Item-level details of a message item that the canonical message cannot say. */
function messageHints(item: ResponseMessageItem, parts: ReadonlyArray<TextPart | ImagePart | OpaquePart>) {
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

/** The tool name of a `local_shell_call`, which names none. */
export const LOCAL_SHELL_TOOL = 'local_shell';

function assistantParts(item: ResponseInputItem, toolNames: Map<string, string>): Part[] {
  if (!isReadItem(item)) return [opaque(item)];
  if (isMessage(item)) return assistantMessageParts(item);
  switch (item.type) {
    case 'reasoning':
      return [reasoningPart(item)];
    case 'function_call': {
      toolNames.set(item.call_id, item.name);
      const extra = extrasOf(item, ['type', 'id', 'call_id', 'name', 'arguments', 'status']);
      const hints = sliceProviderData(NAMESPACE, { id: item.id, status: item.status, extra });
      return [{ type: 'tool-call', id: item.call_id, name: item.name, arguments: item.arguments, ...hints }];
    }
    case 'custom_tool_call': {
      toolNames.set(item.call_id, item.name);
      const extra = extrasOf(item, ['type', 'id', 'call_id', 'name', 'input', 'status']);
      const hints = sliceProviderData(NAMESPACE, {
        item: item.type,
        id: item.id,
        status: item.status,
        extra,
      });
      return [{ type: 'tool-call', id: item.call_id, name: item.name, arguments: item.input, ...hints }];
    }
    case 'local_shell_call': {
      toolNames.set(item.call_id, LOCAL_SHELL_TOOL);
      const extra = extrasOf(item, ['type', 'id', 'call_id', 'action', 'status']);
      const hints = sliceProviderData(NAMESPACE, {
        item: item.type,
        id: item.id,
        status: item.status,
        extra,
      });
      const args = JSON.stringify(item.action);
      return [{ type: 'tool-call', id: item.call_id, name: LOCAL_SHELL_TOOL, arguments: args, ...hints }];
    }
    default:
      return [];
  }
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
    // Codex sends reasoning without ids (stateless, encrypted): nothing to warn about on the way back.
    idAbsent: item.id === undefined ? true : undefined,
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

function toolMessage(
  item: ResponseFunctionCallOutputItem | ResponseCustomToolCallOutputItem,
  toolNames: Map<string, string>,
): Message {
  const content =
    typeof item.output === 'string' ? item.output : item.output.map((part) => contentPart(part, 'tool'));
  const extra = extrasOf(item, ['type', 'id', 'call_id', 'output', 'status']);
  const kind = item.type === 'custom_tool_call_output' ? item.type : undefined;
  const hints = sliceProviderData(NAMESPACE, { item: kind, id: item.id, status: item.status, extra });
  const name = toolNames.get(item.call_id) ?? '';
  return { role: 'tool', parts: [{ type: 'tool-result', callId: item.call_id, name, content, ...hints }] };
}

/** A `local_shell_call_output`: its `id` is the `call_id` of the call it answers. */
function localShellOutputMessage(item: ResponseLocalShellCallOutputItem): Message {
  const extra = extrasOf(item, ['type', 'id', 'output', 'status']);
  const hints = sliceProviderData(NAMESPACE, { item: item.type, status: item.status, extra });
  const result: Part = {
    type: 'tool-result',
    callId: item.id,
    name: LOCAL_SHELL_TOOL,
    content: item.output,
    ...hints,
  };
  return { role: 'tool', parts: [result] };
}

function contentParts(
  content: ResponseMessageItem['content'],
  role: Role,
): Array<TextPart | ImagePart | OpaquePart> {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part) => contentPart(part, role));
}

function contentPart(part: ResponseMessageContentPart, role: Role): TextPart | ImagePart | OpaquePart {
  if (!isReadContent(part)) return opaquePart(NAMESPACE, part);
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
