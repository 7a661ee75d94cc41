/**
 * User turns that follow each other, joined, for a client that never sends them so. A view puts
 * a span fold after its request, and a pruned request's tombstone before the next one: two user
 * messages in a row, which DeepSeek's reasoner and servers whose chat template wants roles to
 * alternate (vLLM, LM Studio) refuse with a 400. A client that sends such runs itself
 * gets its view as written.
 */
import type { OpenAIChatMessage, OpenAIChatUserMessage, OpenAIChatUserPart } from './openai-chat-api.js';

function isUser(message: OpenAIChatMessage | undefined): message is OpenAIChatUserMessage {
  return message?.role === 'user';
}

/** Whether `messages` hold two user messages in a row. */
function hasUserRuns(messages: readonly OpenAIChatMessage[]): boolean {
  return messages.some((message, index) => isUser(message) && isUser(messages[index - 1]));
}

function partsOf(content: OpenAIChatUserMessage['content']): OpenAIChatUserPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** A message's fields beside its role and content (a `name`, a provider's extras). */
function hasOwnFields(message: OpenAIChatUserMessage): boolean {
  return Object.keys(message).some((key) => key !== 'role' && key !== 'content');
}

/**
 * `written` with each run of user messages joined into one: texts by a blank line, parts one
 * after the other (their breakpoints with them). The fields of the run's one message that has
 * any stay; a run where two messages have fields of their own is left as it is.
 */
export function joinUserRuns(written: readonly OpenAIChatMessage[]): OpenAIChatMessage[] {
  const out: OpenAIChatMessage[] = [];
  for (const message of written) {
    const last = out.at(-1);
    if (!isUser(message) || !isUser(last) || (hasOwnFields(last) && hasOwnFields(message))) {
      out.push(message);
      continue;
    }
    const content =
      typeof last.content === 'string' && typeof message.content === 'string'
        ? `${last.content}\n\n${message.content}`
        : [...partsOf(last.content), ...partsOf(message.content)];
    out[out.length - 1] = { ...(hasOwnFields(last) ? last : message), content };
  }
  return out;
}

/** `written` (a view) with its user turns alternating as the client's own `sent` ones do. */
export function alternatingLikeClient(
  written: OpenAIChatMessage[],
  sent: readonly OpenAIChatMessage[],
): OpenAIChatMessage[] {
  return hasUserRuns(sent) || !hasUserRuns(written) ? written : joinUserRuns(written);
}
