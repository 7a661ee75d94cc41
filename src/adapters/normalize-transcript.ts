/**
 * Normalisation in canonical space, run after any `from*` adapter and before indexing. It never
 * drops content and never mutates its input; each repair or risk is reported as a warning
 * whose `messageIndex` refers to the input transcript.
 *
 * | case                                                 | what happens                                      | code                       |
 * | ---------------------------------------------------- | ------------------------------------------------- | -------------------------- |
 * | role not system / user / assistant / tool            | BadInputError with `messageIndex`                 | (error)                    |
 * | unknown part type, or `parts` not an array           | BadInputError with `messageIndex`                 | (error)                    |
 * | tool-call id already used by an earlier call         | renamed `<id>__2` (`__3`...) with its results     | `duplicate-tool-call-id`   |
 * | tool result whose id matches no earlier tool call    | user text `[tool result for unknown call X]: ...` | `orphan-tool-result`       |
 * | tool call with no result (runs end mid-call)         | kept; the view layer decides                      | `missing-tool-result`      |
 * | tool-call arguments that are not JSON                | kept as is                                        | `malformed-tool-arguments` |
 * | message with nothing in it (no parts, blank text) ¹  | kept                                              | `empty-content`            |
 * | whitespace-only text part beside other content ²     | kept                                              | `empty-content`            |
 * | one part with over 1,000,000 characters of text      | kept                                              | `huge-content`             |
 *
 * ¹ Except a final assistant message (a prefill). Anthropic rejects empty messages; OpenAI
 *   rejects an assistant turn with neither content nor tool calls.
 * ² Anthropic rejects whitespace-only text blocks. Empty (`''`) text beside other content is
 *   not flagged: it carries nothing and the Anthropic adapter leaves it out.
 *
 * Results answer calls of the same id in order: with two calls `X` (the second renamed `X__2`),
 * the first result `X` goes to the first call and the next to `X__2`.
 */
import { BadInputError } from '../core/errors.js';
import { type Message, type Part, partText, type ToolResultPart, type Warning } from '../core/transcript.js';

export const HUGE_CONTENT_CHARS = 1_000_000;

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
const PART_TYPES = new Set(['text', 'image', 'tool-call', 'tool-result', 'reasoning', 'opaque']);

export function normalizeTranscript(messages: Message[]): { messages: Message[]; warnings: Warning[] } {
  messages.forEach(checkShape);
  const warnings: Warning[] = [];
  const warn = (code: string, messageIndex: number, message: string) =>
    warnings.push({ code, messageIndex, message });
  const allIds = new Set(
    messages.flatMap((message) =>
      message.parts.flatMap((part) => (part.type === 'tool-call' ? [part.id] : [])),
    ),
  );
  const usedIds = new Set<string>();
  /** Per original id, the (possibly renamed) calls still waiting for a result, oldest first. */
  const waiting = new Map<string, Array<{ id: string; messageIndex: number }>>();
  const lastAnswered = new Map<string, string>();
  const out: Message[] = [];

  messages.forEach((message, messageIndex) => {
    checkContent(message, messageIndex, messageIndex === messages.length - 1, warn);
    if (message.role === 'tool') {
      out.push(...answerResults(message, messageIndex, waiting, lastAnswered, warn));
      return;
    }
    let changed = false;
    const parts = message.parts.map((part): Part => {
      if (part.type !== 'tool-call') return part;
      if (!isJson(part.arguments))
        warn('malformed-tool-arguments', messageIndex, `tool call ${part.id}: arguments are not JSON`);
      let id = part.id;
      if (usedIds.has(id)) {
        id = freshId(part.id, allIds, usedIds);
        changed = true;
        warn('duplicate-tool-call-id', messageIndex, `tool call id ${part.id} used again; renamed ${id}`);
      }
      usedIds.add(id);
      waiting.set(part.id, [...(waiting.get(part.id) ?? []), { id, messageIndex }]);
      return id === part.id ? part : { ...part, id };
    });
    out.push(changed ? { ...message, parts } : message);
  });

  for (const calls of waiting.values()) {
    for (const call of calls)
      warn('missing-tool-result', call.messageIndex, `tool call ${call.id} has no result`);
  }
  warnings.sort((a, b) => (a.messageIndex ?? 0) - (b.messageIndex ?? 0));
  return { messages: out, warnings };
}

type Warn = (code: string, messageIndex: number, message: string) => void;

function answerResults(
  message: Message,
  messageIndex: number,
  waiting: Map<string, Array<{ id: string; messageIndex: number }>>,
  lastAnswered: Map<string, string>,
  warn: Warn,
): Message[] {
  const out: Message[] = [];
  let kept: Part[] = [];
  let changed = false;
  for (const part of message.parts) {
    if (part.type !== 'tool-result') {
      kept.push(part);
      continue;
    }
    const target = waiting.get(part.callId)?.shift()?.id ?? lastAnswered.get(part.callId);
    if (target === undefined) {
      warn(
        'orphan-tool-result',
        messageIndex,
        `tool result for unknown call ${part.callId}; kept as user text`,
      );
      changed = true;
      if (kept.length > 0) out.push({ ...message, parts: kept });
      kept = [];
      out.push(orphanAsUser(part));
      continue;
    }
    lastAnswered.set(part.callId, target);
    if (target !== part.callId) changed = true;
    kept.push(target === part.callId ? part : { ...part, callId: target });
  }
  if (!changed) return [message];
  if (kept.length > 0) out.push({ ...message, parts: kept });
  return out;
}

function orphanAsUser(part: ToolResultPart): Message {
  const prefix = `[tool result for unknown call ${part.callId}]:`;
  if (typeof part.content === 'string')
    return { role: 'user', parts: [{ type: 'text', text: `${prefix} ${part.content}` }] };
  return { role: 'user', parts: [{ type: 'text', text: prefix }, ...part.content] };
}

function freshId(id: string, allIds: ReadonlySet<string>, usedIds: ReadonlySet<string>): string {
  for (let suffix = 2; ; suffix++) {
    const candidate = `${id}__${suffix}`;
    if (!allIds.has(candidate) && !usedIds.has(candidate)) return candidate;
  }
}

function checkShape(message: Message, messageIndex: number): void {
  const role = (message as { role?: unknown } | null)?.role;
  if (!ROLES.has(role as string))
    throw new BadInputError(`message ${messageIndex}: unknown role ${JSON.stringify(role)}`, {
      messageIndex,
    });
  if (!Array.isArray(message.parts))
    throw new BadInputError(`message ${messageIndex}: parts must be an array`, { messageIndex });
  for (const part of message.parts) {
    const type = (part as { type?: unknown } | null)?.type;
    if (!PART_TYPES.has(type as string)) {
      throw new BadInputError(`message ${messageIndex}: unknown part type ${JSON.stringify(type)}`, {
        messageIndex,
      });
    }
  }
}

function checkContent(message: Message, messageIndex: number, isLast: boolean, warn: Warn): void {
  const blank = (part: Part) => part.type === 'text' && part.text.trim() === '';
  const meaningful = message.parts.filter((part) => !blank(part));
  if (meaningful.length === 0 && !(isLast && message.role === 'assistant')) {
    warn('empty-content', messageIndex, `${message.role} message has no content`);
  } else if (message.parts.some((part) => blank(part) && part.type === 'text' && part.text !== '')) {
    warn('empty-content', messageIndex, 'whitespace-only text part beside other content');
  }
  for (const part of message.parts) {
    const length = partText(part).length;
    if (length > HUGE_CONTENT_CHARS)
      warn('huge-content', messageIndex, `a ${part.type} part holds ${length} characters`);
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
