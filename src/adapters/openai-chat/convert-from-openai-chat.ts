import type { ImagePart, Message, OpaquePart, Part, TextPart, Warning } from '../../core/transcript.js';
import { parseDataUri } from '../data-uri.js';
import { opaquePart } from '../opaque-part.js';
import { extrasOf, type JsonRecord, sliceProviderData } from '../provider-data.js';
import { type ElementReading, type ReadResume, readBefore, toolNamesOf } from '../read-resume.js';
import { validateMessages } from '../validate-messages.js';
import { type ContentShape, contentParts, defaultContentShape, NAMESPACE } from './content-shape.js';
import {
  isReadUserPart,
  type OpenAIChatAssistantMessage,
  type OpenAIChatImagePart,
  OpenAIChatMessage,
  type OpenAIChatOpaquePart,
  type OpenAIChatRefusalPart,
  type OpenAIChatTextPart,
  type OpenAIChatToolCall,
} from './openai-chat-api.js';

const MESSAGE_KEYS: Record<OpenAIChatMessage['role'], readonly string[]> = {
  system: ['role', 'content', 'name'],
  developer: ['role', 'content', 'name'],
  user: ['role', 'content', 'name'],
  assistant: ['role', 'content', 'name', 'refusal', 'tool_calls', 'reasoning_content'],
  tool: ['role', 'content', 'tool_call_id'],
};

/**
 * OpenAI Chat Completions messages to the canonical transcript. Lossless: every field that the
 * canonical shape cannot say is kept in `providerData.openaiChat`, so `toOpenAIChat` writes the
 * messages back byte for byte. Each tool message becomes one canonical tool message; its tool
 * name is looked up from the assistant call it answers (empty when there is none). User content
 * parts the adapter does not read (`input_audio`, `file`) become opaque parts, in place.
 *
 * `resume` reads from a later message on, after an earlier reading of the same messages before
 * it (see `read-resume.ts`).
 *
 * @throws BadInputError naming the message index when a message does not match the schema.
 */
export function fromOpenAIChat(
  input: OpenAIChatMessage[],
  resume?: ReadResume,
): { messages: Message[]; warnings: Warning[] } & ElementReading {
  const from = resume?.index ?? 0;
  const wire = validateMessages(input, OpenAIChatMessage, 'openai-chat message', from);
  const { messages, ends } = resume === undefined ? { messages: [], ends: [0] } : readBefore(resume);
  const toolNames = toolNamesOf(messages);
  for (let index = from; index < wire.length; index += 1) {
    messages.push(convertMessage(wire[index]!, toolNames));
    ends.push(messages.length);
  }
  return { messages, warnings: [], ends };
}

function convertMessage(message: OpenAIChatMessage, toolNames: Map<string, string>): Message {
  const extra = extrasOf(message, MESSAGE_KEYS[message.role]);
  switch (message.role) {
    case 'system':
    case 'developer':
    case 'user': {
      const parts = convertContent(message.content);
      const hints = {
        role: message.role === 'developer' ? 'developer' : undefined,
        name: message.name,
        extra,
      };
      const role = message.role === 'user' ? 'user' : 'system';
      return {
        role,
        parts,
        ...sliceProviderData(NAMESPACE, { ...hints, content: shapeHint(message.content, parts, false) }),
      };
    }
    case 'assistant':
      return convertAssistant(message, toolNames, extra);
    case 'tool': {
      const content =
        typeof message.content === 'string' ? message.content : message.content.map(convertText);
      const name = toolNames.get(message.tool_call_id) ?? '';
      // A tool message's own fields (`cache_control`, …) ride on its result: that is what
      // `toOpenAIChat` writes back as a tool message, whatever tool messages were joined around it.
      const result: Part = {
        type: 'tool-result',
        callId: message.tool_call_id,
        name,
        content,
        ...sliceProviderData(NAMESPACE, { extra }),
      };
      return { role: 'tool', parts: [result] };
    }
  }
}

function convertAssistant(
  message: OpenAIChatAssistantMessage,
  toolNames: Map<string, string>,
  extra: JsonRecord | undefined,
): Message {
  const parts: Part[] = [];
  if (typeof message.reasoning_content === 'string')
    parts.push({ type: 'reasoning', text: message.reasoning_content });
  const content = message.content;
  parts.push(...convertContent(content ?? []));
  if (typeof message.refusal === 'string') {
    parts.push({
      type: 'text',
      text: message.refusal,
      ...sliceProviderData(NAMESPACE, { refusal: 'field' }),
    });
  }
  for (const call of message.tool_calls ?? []) {
    parts.push(convertToolCall(call));
    toolNames.set(call.id, call.type === 'function' ? call.function.name : call.custom.name);
  }
  const hasToolCalls = (message.tool_calls?.length ?? 0) > 0;
  const hints = {
    name: message.name,
    content: content === undefined ? 'absent' : shapeHint(content, parts, hasToolCalls),
    refusal: message.refusal === null ? null : undefined,
    reasoning_content: message.reasoning_content === null ? null : undefined,
    tool_calls: message.tool_calls === null ? null : message.tool_calls?.length === 0 ? 'empty' : undefined,
    extra,
  };
  return { role: 'assistant', parts, ...sliceProviderData(NAMESPACE, hints) };
}

/** The wire shape of `content`, or undefined when it is the one `toOpenAIChat` would pick anyway. */
function shapeHint(
  content: unknown,
  parts: readonly Part[],
  hasToolCalls: boolean,
): ContentShape | undefined {
  const actual: ContentShape = typeof content === 'string' ? 'string' : content === null ? 'null' : 'array';
  return actual === defaultContentShape(contentParts(parts), hasToolCalls) ? undefined : actual;
}

type WireContentPart =
  | OpenAIChatTextPart
  | OpenAIChatImagePart
  | OpenAIChatRefusalPart
  | OpenAIChatOpaquePart;

function convertContent(
  content: string | readonly WireContentPart[] | null,
): Array<TextPart | ImagePart | OpaquePart> {
  if (content === null) return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map(convertContentPart);
}

/** Whether a content part is one the adapter reads (only user content may hold others). */
function isReadContentPart(
  part: WireContentPart,
): part is OpenAIChatTextPart | OpenAIChatImagePart | OpenAIChatRefusalPart {
  return part.type === 'refusal' || isReadUserPart(part);
}

function convertContentPart(part: WireContentPart): TextPart | ImagePart | OpaquePart {
  if (!isReadContentPart(part)) return opaquePart(NAMESPACE, part);
  switch (part.type) {
    case 'text':
      return convertText(part);
    case 'refusal': {
      const extra = extrasOf(part, ['type', 'refusal']);
      return {
        type: 'text',
        text: part.refusal,
        ...sliceProviderData(NAMESPACE, { refusal: 'part', extra }),
      };
    }
    case 'image_url':
      return convertImage(part);
  }
}

function convertText(part: OpenAIChatTextPart): TextPart {
  return {
    type: 'text',
    text: part.text,
    ...sliceProviderData(NAMESPACE, { extra: extrasOf(part, ['type', 'text']) }),
  };
}

function convertImage(part: OpenAIChatImagePart): ImagePart {
  const { url, detail } = part.image_url;
  const dataUri = url.startsWith('data:') ? parseDataUri(url) : undefined;
  const hints = sliceProviderData(NAMESPACE, { detail, extra: extrasOf(part, ['type', 'image_url']) });
  if (dataUri) {
    const mediaType = dataUri.mediaType === '' ? {} : { mediaType: dataUri.mediaType };
    return { type: 'image', ref: url, source: 'data', ...mediaType, ...hints };
  }
  return { type: 'image', ref: url, source: 'url', ...hints };
}

function convertToolCall(call: OpenAIChatToolCall): Part {
  if (call.type === 'custom') {
    const extra = extrasOf(call, ['id', 'type', 'custom']);
    const hints = sliceProviderData(NAMESPACE, { type: 'custom', extra });
    return { type: 'tool-call', id: call.id, name: call.custom.name, arguments: call.custom.input, ...hints };
  }
  const extra = extrasOf(call, ['id', 'type', 'function']);
  const { name, arguments: args } = call.function;
  return {
    type: 'tool-call',
    id: call.id,
    name,
    arguments: args,
    ...sliceProviderData(NAMESPACE, { extra }),
  };
}
