import type {
  ImagePart,
  Message,
  OpaquePart,
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
import { isRecord, readSlice, withExtras } from '../provider-data.js';
import { type WholeElements, type WireSource, wholeElementsOf } from '../read-resume.js';
import type {
  AnthropicAssistantBlock,
  AnthropicImageBlock,
  AnthropicImageSource,
  AnthropicMessage,
  AnthropicOpaqueBlock,
  AnthropicSystem,
  AnthropicSystemMessage,
  AnthropicTextBlock,
  AnthropicToolResultBlock,
  AnthropicToolResultContentBlock,
  AnthropicToolUseBlock,
  AnthropicUserBlock,
  AnthropicUserMessage,
} from './anthropic-api.js';
import { NAMESPACE } from './convert-from-anthropic-messages.js';

type Group = { blocks: AnthropicUserBlock[]; members: Message[]; turn: unknown };

/**
 * Canonical transcript to Anthropic Messages `{ system?, messages }`; the exact inverse of
 * `fromAnthropicMessages` for transcripts it produced. Leading system messages become the
 * top-level `system`; a system message read from `messages` goes back there, in place. Opaque
 * parts this adapter read are written back as they came. Consecutive user and tool messages
 * merge into one user message, in order, so that roles alternate, unless they remember different
 * wire messages. Empty text parts next to other content are left out (the API rejects empty
 * text blocks). Lossy cases push a warning: `reasoning-dropped` (reasoning without a signature
 * cannot be sent; redacted reasoning keeps only its data), `malformed-tool-arguments`
 * (arguments that are not a JSON object are wrapped as `{ raw_arguments }`), `unsupported-part`
 * (including another provider's opaque part, sent as its text) and `system-in-conversation` (a
 * later system message from elsewhere is sent as user text: only some models take system
 * messages mid-conversation).
 *
 * `source`: the wire messages the transcript was read from, with the reading. Each one whose
 * messages stand in `messages` whole (`wholeElementsOf`) is written as the client's message
 * itself where the rules above would write it alone: the same JSON, not built again (a proxy
 * then finds it unchanged by identity).
 */
export function toAnthropicMessages(
  messages: Message[],
  source?: WireSource<AnthropicMessage>,
): {
  system?: AnthropicSystem;
  messages: AnthropicMessage[];
  warnings: Warning[];
} {
  const warnings: Warning[] = [];
  const leading = messages.findIndex((message) => message.role !== 'system' || isWireSystem(message));
  const systemCount = leading === -1 ? messages.length : leading;
  const out: AnthropicMessage[] = [];
  /** Where each system message of `messages` went in `out`, by its canonical index. */
  const placed = new Map<number, number>();
  let group: Group | undefined;
  const flush = () => {
    if (group) out.push({ role: 'user', content: userContent(group) });
    group = undefined;
  };
  const wholeAt = source === undefined ? undefined : wholeElementsOf(source);
  for (let index = systemCount; index < messages.length; index += 1) {
    const message = messages[index]!;
    const emit: Emit = (warning) => warnings.push({ ...warning, messageIndex: index });
    const whole = wholeAt?.(messages, index);
    const openTurn = group === undefined ? NO_GROUP : group.turn;
    if (whole !== undefined && writtenAlone(whole, messages, index, openTurn)) {
      flush();
      if (message.role === 'system') placed.set(out.length, index);
      out.push(...whole.elements);
      index += whole.length - 1;
      continue;
    }
    if (message.role === 'assistant') {
      flush();
      out.push({ role: 'assistant', content: assistantContent(message, emit) });
      continue;
    }
    if (message.role === 'system' && isWireSystem(message)) {
      flush();
      placed.set(out.length, index);
      out.push(systemMessage(message, emit));
      continue;
    }
    if (message.role === 'system')
      emit({ code: 'system-in-conversation', message: 'a later system message is sent as user text' });
    const turn = turnOf(message);
    if (group && group.turn !== undefined && turn !== undefined && group.turn !== turn) flush();
    group ??= { blocks: [], members: [], turn };
    group.turn ??= turn;
    group.members.push(message);
    group.blocks.push(...message.parts.map((part) => userBlock(part, emit)));
  }
  flush();
  placeSystemMessages(out, placed, warnings);
  const system = systemCount > 0 ? systemContent(messages.slice(0, systemCount), warnings) : undefined;
  return { ...(system !== undefined ? { system } : {}), messages: out, warnings };
}

/** The turn a message remembers: the index of the wire message it was read from. */
function turnOf(message: Message): unknown {
  return readSlice(message, NAMESPACE).turn;
}

/** No user group is open (as against an open group of no known turn). */
const NO_GROUP = Symbol('no group');

/**
 * Whether wire messages a view holds whole are what the writer would write for their messages
 * alone: a user message is not, when it would merge with the user group open before it or with a
 * user message after it that knows no turn.
 */
function writtenAlone(
  whole: WholeElements<AnthropicMessage>,
  messages: readonly Message[],
  index: number,
  openTurn: unknown,
): boolean {
  if (whole.elements[0]?.role !== 'user') return true;
  const turn = turnOf(messages[index]!);
  if (turn === undefined) return false;
  if (openTurn !== NO_GROUP && (openTurn === undefined || openTurn === turn)) return false;
  const next = messages[index + whole.length];
  if (next === undefined || next.role === 'assistant' || isWireSystem(next)) return true;
  const nextTurn = turnOf(next);
  return nextTurn !== undefined && nextTurn !== turn;
}

/**
 * A system message in `messages` must follow a user turn or an assistant turn that ends in server
 * tool use, and be last or followed by an assistant turn (so never next to another); the API
 * refuses one anywhere else, except the directive-only form (empty content), which may stand
 * anywhere: Claude Code sends a system message, then an effort directive, then the assistant
 * turn, so directives after a system message count as no neighbour. Governance can leave one
 * elsewhere (a call pruned with its shell takes the user turn before the message along): it is
 * then sent as user text (blocks a user turn cannot hold, such as a tool addition, as a line
 * naming them), with a `system-in-conversation` warning.
 */
function placeSystemMessages(
  out: AnthropicMessage[],
  placed: ReadonlyMap<number, number>,
  warnings: Warning[],
): void {
  for (const [index, messageIndex] of placed) {
    const message = out[index] as AnthropicSystemMessage;
    if (isDirective(message)) continue;
    const before = out[index - 1];
    let next = index + 1;
    while (isDirective(out[next])) next += 1;
    const after = out[next];
    const follows = before?.role === 'user' || endsInServerToolUse(before);
    if (follows && (after === undefined || after.role === 'assistant')) continue;
    out[index] = { role: 'user', content: asUserContent(message.content) };
    warnings.push({
      code: 'system-in-conversation',
      messageIndex,
      message: 'a system message left where the API takes none is sent as user text',
    });
  }
}

/** A system message's content as a user turn holds it: text as it is, any other block named. */
function asUserContent(content: AnthropicSystemMessage['content']): AnthropicUserMessage['content'] {
  if (typeof content === 'string') return content;
  return content.map((block) =>
    block.type === 'text'
      ? (block as AnthropicTextBlock)
      : { type: 'text' as const, text: `[${block.type} omitted]` },
  );
}

/** A system message that holds no text, only what rides beside it (`output_config`). */
function isDirective(message: AnthropicMessage | undefined): boolean {
  return message?.role === 'system' && Array.isArray(message.content) && message.content.length === 0;
}

function endsInServerToolUse(message: AnthropicMessage | undefined): boolean {
  if (message?.role !== 'assistant' || !Array.isArray(message.content)) return false;
  const last = message.content.at(-1);
  return last?.type === 'server_tool_use' || last?.type === 'mcp_tool_use';
}

/** A system message read from `messages` (it remembers its wire index), not from `system`. */
function isWireSystem(message: Message): boolean {
  return message.role === 'system' && readSlice(message, NAMESPACE).turn !== undefined;
}

function systemMessage(message: Message, emit: Emit): AnthropicSystemMessage {
  const blocks = message.parts.map((part): { type: string } => {
    const own = part.type === 'opaque' ? ownOpaqueData(part, NAMESPACE) : undefined;
    if (own !== undefined) return own as { type: string };
    return textBlock(part.type === 'text' ? part : placeholder(part, emit));
  });
  const content = asString(message, 1) ?? withoutEmptyText(blocks);
  return withExtras(
    { role: 'system', content } as AnthropicSystemMessage,
    readSlice(message, NAMESPACE).extra,
  );
}

function systemContent(system: readonly Message[], warnings: Warning[]): AnthropicSystem {
  const blocks = system.flatMap((message, messageIndex) =>
    message.parts.map((part) =>
      textBlock(
        part.type === 'text' ? part : placeholder(part, (w) => warnings.push({ ...w, messageIndex })),
      ),
    ),
  );
  const [only] = system;
  return asString(only, system.length) ?? blocks;
}

/** The remembered string form, when the content is still one plain text part. */
function asString(message: Message | undefined, count: number): string | undefined {
  if (count !== 1 || !message || readSlice(message, NAMESPACE).content !== 'string') return undefined;
  const [part] = message.parts;
  return message.parts.length === 1 && part?.type === 'text' && !readSlice(part, NAMESPACE).extra
    ? part.text
    : undefined;
}

function userContent(group: Group): string | AnthropicUserBlock[] {
  return asString(group.members[0], group.members.length) ?? withoutEmptyText(group.blocks);
}

function assistantContent(message: Message, emit: Emit): string | AnthropicAssistantBlock[] {
  const blocks = message.parts.flatMap((part): AnthropicAssistantBlock[] => {
    switch (part.type) {
      case 'text':
        return [textBlock(part)];
      case 'reasoning':
        return reasoningBlock(part, emit);
      case 'tool-call':
        return [toolUseBlock(part, emit)];
      case 'opaque':
        return [opaqueBlock(part, emit)];
      default:
        return [textBlock(placeholder(part, emit))];
    }
  });
  return asString(message, 1) ?? withoutEmptyText(blocks);
}

/** The block this adapter read, as it came; another provider's opaque part as text. */
function opaqueBlock(part: OpaquePart, emit: Emit): AnthropicOpaqueBlock | AnthropicTextBlock {
  const data = ownOpaqueData(part, NAMESPACE);
  return data ? (data as AnthropicOpaqueBlock) : textBlock(placeholder(part, emit));
}

function withoutEmptyText<B extends { type: string }>(blocks: B[]): B[] {
  if (blocks.length < 2) return blocks;
  return blocks.filter(
    (block) =>
      !(
        block.type === 'text' &&
        (block as { text?: unknown }).text === '' &&
        Object.keys(block).length === 2
      ),
  );
}

function userBlock(part: Part, emit: Emit): AnthropicUserBlock {
  switch (part.type) {
    case 'text':
      return textBlock(part);
    case 'image':
      return imageBlock(part) ?? textBlock(placeholder(part, emit));
    case 'tool-result':
      return toolResultBlock(part, emit);
    case 'opaque':
      return opaqueBlock(part, emit);
    default:
      return textBlock(placeholder(part, emit));
  }
}

function textBlock(part: TextPart): AnthropicTextBlock {
  return withExtras({ type: 'text', text: part.text }, readSlice(part, NAMESPACE).extra);
}

/** The image block, or undefined when Anthropic cannot take the image (inline data not in base64). */
function imageBlock(part: ImagePart): AnthropicImageBlock | undefined {
  const source = imageSource(part);
  if (!source) return undefined;
  return withExtras<AnthropicImageBlock>({ type: 'image', source }, readSlice(part, NAMESPACE).extra);
}

function imageSource(part: ImagePart): AnthropicImageSource | undefined {
  if (part.source === 'url') return { type: 'url', url: part.ref };
  if (part.source === 'file-id') return { type: 'file', file_id: part.ref };
  const dataUri = parseDataUri(part.ref);
  if (!dataUri?.base64) return undefined;
  return { type: 'base64', media_type: dataUri.mediaType || (part.mediaType ?? ''), data: dataUri.data };
}

function reasoningBlock(part: ReasoningPart, emit: Emit): AnthropicAssistantBlock[] {
  const extra = readSlice(part, NAMESPACE).extra;
  if (part.signature !== undefined) {
    return [withExtras({ type: 'thinking', thinking: part.text, signature: part.signature }, extra)];
  }
  if (part.redactedData !== undefined) {
    if (part.text !== '')
      emit({ code: 'reasoning-dropped', message: 'redacted reasoning keeps its data, not its text' });
    return [withExtras({ type: 'redacted_thinking', data: part.redactedData }, extra)];
  }
  emit({
    code: 'reasoning-dropped',
    message: 'Anthropic needs a signature to take reasoning back; left out',
  });
  return [];
}

function toolUseBlock(part: ToolCallPart, emit: Emit): AnthropicToolUseBlock {
  const extra = readSlice(part, NAMESPACE).extra;
  return withExtras({ type: 'tool_use', id: part.id, name: part.name, input: parseInput(part, emit) }, extra);
}

function parseInput(part: ToolCallPart, emit: Emit): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(part.arguments);
    if (isRecord(value)) return value;
  } catch {
    // reported below
  }
  emit({
    code: 'malformed-tool-arguments',
    message: `tool call ${part.id}: arguments are not a JSON object; sent as { raw_arguments }`,
  });
  return { raw_arguments: part.arguments };
}

function toolResultBlock(part: ToolResultPart, emit: Emit): AnthropicToolResultBlock {
  const hints = readSlice(part, NAMESPACE);
  const content =
    typeof part.content === 'string'
      ? part.content
      : part.content.map((inner): AnthropicToolResultContentBlock => {
          if (inner.type === 'text') return textBlock(inner);
          if (inner.type === 'opaque') return opaqueBlock(inner, emit);
          return imageBlock(inner) ?? textBlock(placeholder(inner, emit));
        });
  const block: AnthropicToolResultBlock = {
    type: 'tool_result',
    tool_use_id: part.callId,
    ...(hints.content === 'absent' && content === '' ? {} : { content }),
    ...(part.isError !== undefined ? { is_error: part.isError } : {}),
  };
  return withExtras(block, hints.extra);
}

/** A part the target cannot hold, said out loud as text. */
function placeholder(part: Part, emit: Emit): TextPart {
  return placeholderText(part, emit, 'to Anthropic');
}
