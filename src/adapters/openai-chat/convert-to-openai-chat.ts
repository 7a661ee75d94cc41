import type {
  ImagePart,
  Message,
  Part,
  ReasoningPart,
  TextPart,
  ToolCallPart,
  Warning,
} from '../../core/transcript.js';
import { ownOpaqueData } from '../opaque-part.js';
import { type Emit, placeholderText } from '../placeholder-text.js';
import { readSlice, withExtras } from '../provider-data.js';
import { type WireSource, writeEachMessage } from '../read-resume.js';
import {
  type ContentPart,
  contentParts,
  defaultContentShape,
  NAMESPACE,
  shapeFits,
} from './content-shape.js';
import type {
  OpenAIChatAssistantMessage,
  OpenAIChatImagePart,
  OpenAIChatMessage,
  OpenAIChatOpaquePart,
  OpenAIChatRefusalPart,
  OpenAIChatTextPart,
  OpenAIChatToolCall,
  OpenAIChatToolMessage,
  OpenAIChatUserPart,
} from './openai-chat-api.js';

/**
 * Canonical transcript to OpenAI Chat Completions messages. Exact inverse of `fromOpenAIChat`
 * for transcripts it produced. Lossy cases push a warning instead of throwing:
 * `reasoning-metadata-dropped` (signatures and encrypted reasoning have no chat field),
 * `tool-error-flag-dropped` (chat tool messages have no error flag), `unsupported-part` (an
 * image or other part a role cannot hold, or another provider's opaque part, becomes a text
 * placeholder). An opaque user content part this adapter read goes back as it came.
 *
 * `source`: the wire messages the transcript was read from, with the reading; each one whose
 * messages stand in `messages` whole (`wholeElementsOf`) is written as the client's message
 * itself, without building it again.
 */
export function toOpenAIChat(
  messages: Message[],
  source?: WireSource<OpenAIChatMessage>,
): { messages: OpenAIChatMessage[]; warnings: Warning[] } {
  const warnings: Warning[] = [];
  const out = writeEachMessage(messages, source, (message, messageIndex): OpenAIChatMessage[] => {
    const emit: Emit = (warning) => warnings.push({ ...warning, messageIndex });
    if (message.role === 'assistant') return [convertAssistant(message, emit)];
    if (message.role === 'tool') return convertTool(message, emit);
    return [convertSystemOrUser(message, emit)];
  });
  return { messages: out, warnings };
}

function convertSystemOrUser(message: Message, emit: Emit): OpenAIChatMessage {
  const hints = readSlice(message, NAMESPACE);
  const name = typeof hints.name === 'string' ? { name: hints.name } : {};
  if (message.role === 'user') {
    const parts = message.parts.map((part): ContentPart => {
      if (part.type === 'text' || part.type === 'image') return part;
      if (part.type === 'opaque' && ownOpaqueData(part, NAMESPACE)) return part;
      return placeholder(part, emit);
    });
    const content = writeContent(parts, false, hints.content, convertUserPart);
    return withExtras({ role: 'user', content, ...name }, hints.extra);
  }
  const parts = message.parts.map((part) => (part.type === 'text' ? part : placeholder(part, emit)));
  const content = writeContent(parts, false, hints.content, convertText);
  const role = hints.role === 'developer' ? 'developer' : 'system';
  return withExtras({ role, content, ...name }, hints.extra);
}

function convertAssistant(message: Message, emit: Emit): OpenAIChatAssistantMessage {
  const hints = readSlice(message, NAMESPACE);
  const reasoning: string[] = [];
  const body: TextPart[] = [];
  const toolCalls: OpenAIChatToolCall[] = [];
  for (const part of message.parts) {
    if (part.type === 'reasoning') collectReasoning(part, reasoning, emit);
    else if (part.type === 'tool-call') toolCalls.push(convertToolCall(part));
    else if (part.type === 'text') body.push(part);
    else body.push(placeholder(part, emit));
  }
  const refusals = body.filter((part) => readSlice(part, NAMESPACE).refusal === 'field');
  const content = contentParts(body);
  const shape = shapeFits(hints.content, content)
    ? hints.content
    : defaultContentShape(content, toolCalls.length > 0);
  const result: OpenAIChatAssistantMessage = { role: 'assistant' };
  if (shape === 'null') result.content = null;
  else if (shape !== 'absent')
    result.content = writeContent(textOnly(content), false, shape, convertAssistantText);
  if (typeof hints.name === 'string') result.name = hints.name;
  if (refusals.length > 0) result.refusal = refusals.map((part) => part.text).join('');
  else if (hints.refusal === null) result.refusal = null;
  if (toolCalls.length > 0 || hints.tool_calls === 'empty') result.tool_calls = toolCalls;
  else if (hints.tool_calls === null) result.tool_calls = null;
  if (reasoning.length > 0) result.reasoning_content = reasoning.join('\n\n');
  else if (hints.reasoning_content === null) result.reasoning_content = null;
  return withExtras(result, hints.extra);
}

function collectReasoning(part: ReasoningPart, reasoning: string[], emit: Emit): void {
  if (part.signature !== undefined || part.redactedData !== undefined) {
    emit({
      code: 'reasoning-metadata-dropped',
      message:
        'OpenAI Chat has no field for a reasoning signature or encrypted reasoning; only its text is kept',
    });
  }
  if (part.text !== '' || (part.signature === undefined && part.redactedData === undefined))
    reasoning.push(part.text);
}

function convertToolCall(part: ToolCallPart): OpenAIChatToolCall {
  const hints = readSlice(part, NAMESPACE);
  if (hints.type === 'custom') {
    return withExtras(
      { id: part.id, type: 'custom', custom: { name: part.name, input: part.arguments } },
      hints.extra,
    );
  }
  return withExtras(
    { id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } },
    hints.extra,
  );
}

function convertTool(message: Message, emit: Emit): OpenAIChatMessage[] {
  return message.parts.map((part): OpenAIChatMessage => {
    if (part.type !== 'tool-result') {
      return { role: 'user', content: placeholder(part, emit).text };
    }
    if (part.isError === true) {
      emit({
        code: 'tool-error-flag-dropped',
        message: `tool result ${part.callId}: chat has no error flag`,
      });
    }
    const hints = readSlice(part, NAMESPACE);
    const content: OpenAIChatToolMessage['content'] =
      typeof part.content === 'string'
        ? part.content
        : part.content.map((inner) => convertText(inner.type === 'text' ? inner : placeholder(inner, emit)));
    return withExtras({ role: 'tool', content, tool_call_id: part.callId }, hints.extra);
  });
}

function convertUserPart(part: ContentPart): OpenAIChatUserPart {
  if (part.type === 'text') return convertText(part);
  if (part.type === 'image') return convertImage(part);
  return part.data as OpenAIChatOpaquePart;
}

/** Content as a string or an array, by the remembered shape when it still fits. */
function writeContent<P extends ContentPart, W>(
  parts: readonly P[],
  hasToolCalls: boolean,
  hint: unknown,
  convert: (part: P) => W,
): string | W[] {
  const shape = shapeFits(hint, parts) ? hint : defaultContentShape(parts, hasToolCalls);
  if (shape === 'string') return parts[0]?.type === 'text' ? parts[0].text : '';
  return parts.map(convert);
}

function convertText(part: TextPart): OpenAIChatTextPart {
  return withExtras({ type: 'text', text: part.text }, readSlice(part, NAMESPACE).extra);
}

function convertAssistantText(part: TextPart): OpenAIChatTextPart | OpenAIChatRefusalPart {
  const hints = readSlice(part, NAMESPACE);
  if (hints.refusal === 'part') return withExtras({ type: 'refusal', refusal: part.text }, hints.extra);
  return convertText(part);
}

function convertImage(part: ImagePart): OpenAIChatImagePart {
  const hints = readSlice(part, NAMESPACE);
  const detail = typeof hints.detail === 'string' ? { detail: hints.detail } : {};
  return withExtras({ type: 'image_url', image_url: { url: part.ref, ...detail } }, hints.extra);
}

function textOnly(parts: readonly ContentPart[]): TextPart[] {
  return parts.filter((part): part is TextPart => part.type === 'text');
}

/** A part the target role cannot hold, said out loud as text. */
function placeholder(part: Part, emit: Emit): TextPart {
  return placeholderText(part, emit, 'in OpenAI Chat', (image) => image.mediaType ?? 'inline');
}
