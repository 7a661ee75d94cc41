import { BadInputError } from '../../core/errors.js';
import type { ImagePart, Message, OpaquePart, Part, TextPart, Warning } from '../../core/transcript.js';
import { buildBase64DataUri } from '../data-uri.js';
import { opaquePart } from '../opaque-part.js';
import { extrasOf, isRecord, sliceProviderData } from '../provider-data.js';
import { type ElementReading, type ReadResume, readBefore, toolNamesOf } from '../read-resume.js';
import { describeIssues, validateMessages } from '../validate-messages.js';
import {
  type AnthropicAssistantBlock,
  type AnthropicImageBlock,
  AnthropicMessage,
  type AnthropicMessagesPrompt,
  type AnthropicOpaqueBlock,
  AnthropicSystem,
  type AnthropicSystemMessage,
  type AnthropicTextBlock,
  type AnthropicToolResultBlock,
  type AnthropicToolResultContentBlock,
  type AnthropicUserMessage,
  isReadBlock,
} from './anthropic-api.js';

export const NAMESPACE = 'anthropic';

/**
 * Anthropic Messages `{ system?, messages }` to the canonical transcript. `system` becomes a
 * leading system message. A user message holding `tool_result` blocks is split: each result
 * becomes one canonical tool message (its name looked up from the matching `tool_use`), and the
 * runs of other blocks between them become user messages. Every canonical message split from
 * one wire user message remembers that message's index (`providerData.anthropic.turn`) so that
 * `toAnthropicMessages` rebuilds the same messages with the same block order; a `system` message
 * of `messages` (mid-conversation instructions) remembers its index too, which is what tells it
 * from the top-level `system`. Tool arguments are the JSON text of `input`. Blocks the core does
 * not read (documents, search results, server tool use and results, ...) become opaque parts,
 * in place.
 *
 * `resume` reads from a later message on, after an earlier reading of the same `system` and
 * messages before it (see `read-resume.ts`).
 *
 * @throws BadInputError naming the message index for a malformed message.
 */
export function fromAnthropicMessages(
  prompt: AnthropicMessagesPrompt,
  resume?: ReadResume,
): { messages: Message[]; warnings: Warning[] } & ElementReading {
  if (!isRecord(prompt)) throw new BadInputError('anthropic: expected { system?, messages }');
  const from = resume?.index ?? 0;
  const { messages: out, ends } =
    resume === undefined ? { messages: systemMessages(prompt.system), ends: [] } : readBefore(resume);
  if (resume === undefined) ends.push(out.length);
  const wire = validateMessages(prompt.messages, AnthropicMessage, 'anthropic message', from);
  const toolNames = toolNamesOf(out);
  for (let turn = from; turn < wire.length; turn += 1) {
    out.push(...wireMessage(wire[turn]!, turn, toolNames));
    ends.push(out.length);
  }
  return { messages: out, warnings: [], ends };
}

function systemMessages(system: unknown): Message[] {
  return system === undefined ? [] : [systemMessage(system)];
}

function wireMessage(message: AnthropicMessage, turn: number, toolNames: Map<string, string>): Message[] {
  if (message.role === 'user') return userMessages(message, turn, toolNames);
  if (message.role === 'system') return [midConversationSystem(message, turn)];
  const content = typeof message.content === 'string' ? 'string' : undefined;
  const parts =
    typeof message.content === 'string'
      ? [{ type: 'text' as const, text: message.content }]
      : message.content.map((block) => assistantPart(block, toolNames));
  return [{ role: 'assistant', parts, ...sliceProviderData(NAMESPACE, { content }) }];
}

function systemMessage(system: unknown): Message {
  const result = AnthropicSystem.safeParse(system);
  if (!result.success) throw new BadInputError(`anthropic system: ${describeIssues(result.error.issues)}`);
  if (typeof result.data === 'string') {
    return {
      role: 'system',
      parts: [{ type: 'text', text: result.data }],
      providerData: { [NAMESPACE]: { content: 'string' } },
    };
  }
  return { role: 'system', parts: (system as AnthropicTextBlock[]).map(textPart) };
}

/** A `system` message inside `messages`; its own fields (`cache_control`, ...) ride as `extra`. */
function midConversationSystem(message: AnthropicSystemMessage, turn: number): Message {
  const extra = extrasOf(message, ['role', 'content']);
  if (typeof message.content === 'string') {
    const hints = sliceProviderData(NAMESPACE, { turn, content: 'string', extra });
    return { role: 'system', parts: [{ type: 'text', text: message.content }], ...hints };
  }
  const hints = sliceProviderData(NAMESPACE, { turn, extra });
  const parts = message.content.map((block) =>
    block.type === 'text' ? textPart(block as AnthropicTextBlock) : opaque(block),
  );
  return { role: 'system', parts, ...hints };
}

function userMessages(
  message: AnthropicUserMessage,
  turn: number,
  toolNames: Map<string, string>,
): Message[] {
  if (typeof message.content === 'string') {
    const hints = sliceProviderData(NAMESPACE, { turn, content: 'string' });
    return [{ role: 'user', parts: [{ type: 'text', text: message.content }], ...hints }];
  }
  const out: Message[] = [];
  const hints = sliceProviderData(NAMESPACE, { turn });
  let pending: Part[] | undefined;
  for (const block of message.content) {
    if (isReadBlock(block) && block.type === 'tool_result') {
      pending = undefined;
      out.push({ role: 'tool', parts: [toolResultPart(block, toolNames)], ...hints });
      continue;
    }
    if (!pending) {
      pending = [];
      out.push({ role: 'user', parts: pending, ...hints });
    }
    pending.push(contentPart(block));
  }
  if (out.length === 0) out.push({ role: 'user', parts: [], ...hints });
  return out;
}

function assistantPart(block: AnthropicAssistantBlock, toolNames: Map<string, string>): Part {
  if (!isReadBlock(block)) return opaque(block);
  switch (block.type) {
    case 'text':
      return textPart(block);
    case 'thinking': {
      const extra = extrasOf(block, ['type', 'thinking', 'signature']);
      return {
        type: 'reasoning',
        text: block.thinking,
        signature: block.signature,
        ...sliceProviderData(NAMESPACE, { extra }),
      };
    }
    case 'redacted_thinking': {
      const extra = extrasOf(block, ['type', 'data']);
      return {
        type: 'reasoning',
        text: '',
        redactedData: block.data,
        ...sliceProviderData(NAMESPACE, { extra }),
      };
    }
    case 'tool_use': {
      toolNames.set(block.id, block.name);
      const extra = extrasOf(block, ['type', 'id', 'name', 'input']);
      const args = JSON.stringify(block.input);
      return {
        type: 'tool-call',
        id: block.id,
        name: block.name,
        arguments: args,
        ...sliceProviderData(NAMESPACE, { extra }),
      };
    }
  }
}

function toolResultPart(block: AnthropicToolResultBlock, toolNames: Map<string, string>): Part {
  const content =
    block.content === undefined || typeof block.content === 'string'
      ? (block.content ?? '')
      : block.content.map(contentPart);
  const hints = sliceProviderData(NAMESPACE, {
    content: block.content === undefined ? 'absent' : undefined,
    extra: extrasOf(block, ['type', 'tool_use_id', 'content', 'is_error']),
  });
  const isError = block.is_error === undefined ? {} : { isError: block.is_error };
  const name = toolNames.get(block.tool_use_id) ?? '';
  return { type: 'tool-result', callId: block.tool_use_id, name, content, ...isError, ...hints };
}

/** A block of user content or of a tool result's content (never a `tool_result` itself). */
function contentPart(block: AnthropicToolResultContentBlock): TextPart | ImagePart | OpaquePart {
  if (!isReadBlock(block)) return opaque(block);
  return block.type === 'text' ? textPart(block) : imagePart(block);
}

function opaque(block: AnthropicOpaqueBlock): OpaquePart {
  return opaquePart(NAMESPACE, block);
}

function textPart(block: AnthropicTextBlock): TextPart {
  return {
    type: 'text',
    text: block.text,
    ...sliceProviderData(NAMESPACE, { extra: extrasOf(block, ['type', 'text']) }),
  };
}

function imagePart(block: AnthropicImageBlock): ImagePart {
  const hints = sliceProviderData(NAMESPACE, { extra: extrasOf(block, ['type', 'source']) });
  const { source } = block;
  switch (source.type) {
    case 'base64': {
      const ref = buildBase64DataUri(source.media_type, source.data);
      return { type: 'image', ref, source: 'data', mediaType: source.media_type, ...hints };
    }
    case 'url':
      return { type: 'image', ref: source.url, source: 'url', ...hints };
    case 'file':
      return { type: 'image', ref: source.file_id, source: 'file-id', ...hints };
  }
}
