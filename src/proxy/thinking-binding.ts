/**
 * Thinking blocks bound to their prefix (Anthropic's preserved thinking): from Claude 5.1 on, the
 * API checks that nothing before a thinking block a request sends back (`system`, `tools`, the
 * messages before it) changed since the block was produced, and by default on newer accounts
 * refuses a request that fails the check with a 400 ("The block is bound to a different
 * conversation"). Governance changes exactly that prefix: a commit folds earlier messages, and
 * the recovery tools join `tools`. So a request the proxy changed, to such a model, with thinking
 * blocks in it, asks the API to drop the blocks the change invalidated instead
 * (`thinking.block_binding.prefix_mismatch_behavior: "drop_block"`, under its beta header). The
 * blocks a change leaves valid (those before it, and those produced since) stay in use. What the
 * proxy cannot tell before it sends (a request that needed the setting though the proxy did not
 * change it, a platform that does not know the setting) it meets when the API refuses the
 * request (`afterThinkingRefusal`).
 */
import { bindsThinking, THINKING_BINDING_BETA } from '../adapters/index.js';
import { isJsonObject, type JsonObject, type RefusalRemedy } from './wire-dialect.js';

export function isThinkingBlock(block: unknown): boolean {
  return isJsonObject(block) && (block.type === 'thinking' || block.type === 'redacted_thinking');
}

function holdsThinking(messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  return messages.some(
    (message) =>
      isJsonObject(message) && Array.isArray(message.content) && message.content.some(isThinkingBlock),
  );
}

/** Whether the request forces a tool call, which thinking the proxy added could clash with. */
function forcesTool(body: JsonObject): boolean {
  return (
    isJsonObject(body.tool_choice) && (body.tool_choice.type === 'any' || body.tool_choice.type === 'tool')
  );
}

/**
 * A body the proxy changed, made so that the thinking the change invalidated is dropped rather
 * than refused, with the beta it needs (a client's own `prefix_mismatch_behavior` gives way: the
 * proxy made the change); undefined when nothing can be set: another model, no thinking block,
 * thinking turned off (the API's remedy is then to remove the blocks, which the proxy does only
 * once the API refuses them: `afterThinkingRefusal`), or no thinking setting in a request that
 * forces a tool. A request without a `thinking` setting otherwise gets adaptive thinking, these
 * models' default.
 */
export function dropInvalidatedThinking(body: JsonObject): { body: JsonObject; beta: string } | undefined {
  if (typeof body.model !== 'string' || !bindsThinking(body.model)) return undefined;
  if (!holdsThinking(body.messages)) return undefined;
  if (!isJsonObject(body.thinking) && forcesTool(body)) return undefined;
  const thinking: JsonObject = isJsonObject(body.thinking) ? body.thinking : { type: 'adaptive' };
  if (thinking.type === 'disabled') return undefined;
  const binding = isJsonObject(thinking.block_binding) ? thinking.block_binding : {};
  return {
    body: {
      ...body,
      thinking: { ...thinking, block_binding: { ...binding, prefix_mismatch_behavior: 'drop_block' } },
    },
    beta: THINKING_BINDING_BETA,
  };
}

/** The API's refusal of a thinking block sent back behind another prefix than it came after. */
const BOUND_ELSEWHERE = /bound to a different conversation/i;

/**
 * A platform's refusal of the setting itself: the beta unknown to it (Bedrock's "invalid beta
 * flag", or a message naming the beta), or the field unknown once a gateway on the way dropped
 * the beta header ("thinking.adaptive.block_binding: Extra inputs are not permitted").
 */
const SETTING_REFUSED =
  /invalid beta flag|thinking-binding-controls|block_binding[^\n]*extra inputs are not permitted/i;

/**
 * What to send instead of a body the upstream refused with `error` over the model's earlier
 * thinking, or undefined:
 * - a block bound to a different conversation, in a body that does not ask to drop such blocks:
 *   the same body asking to (`dropInvalidatedThinking`), with its beta. This is the request the
 *   proxy could not tell needed it: one sent as it came after earlier requests of the
 *   conversation went governed (a history cut back to before every fold, a body passed on
 *   unread), whose thinking is bound to what those sent. Where the setting cannot be asked for
 *   (thinking off, a forced tool without a thinking setting), the body without its thinking
 *   blocks, as the API's errors page has it;
 * - the setting refused by a platform that does not know it, in a body asking to drop such
 *   blocks: the body without `block_binding`, and without the beta. Such a platform does not
 *   check the binding either.
 */
export function afterThinkingRefusal(
  error: string,
  read: () => JsonObject | undefined,
): RefusalRemedy | undefined {
  const boundElsewhere = BOUND_ELSEWHERE.test(error);
  if (!boundElsewhere && !SETTING_REFUSED.test(error)) return undefined;
  const body = read();
  if (body === undefined) return undefined;
  const thinking = isJsonObject(body.thinking) ? body.thinking : undefined;
  const binding = isJsonObject(thinking?.block_binding) ? thinking.block_binding : undefined;
  if (thinking !== undefined && binding?.prefix_mismatch_behavior === 'drop_block') {
    if (!SETTING_REFUSED.test(error)) return undefined;
    const { block_binding: _, ...unbound } = thinking;
    return { body: { ...body, thinking: unbound }, dropBeta: THINKING_BINDING_BETA };
  }
  if (!boundElsewhere) return undefined;
  const dropping = dropInvalidatedThinking(body);
  if (dropping !== undefined) return { body: dropping.body, addBeta: dropping.beta };
  // With thinking off, the API's remedy: the thinking taken out. Not with thinking on (a model
  // not known to bind), where the turn a request continues must open with its thinking.
  if (!thinkingOff(body)) return undefined;
  const messages = withoutThinking(body.messages);
  return messages === undefined ? undefined : { body: { ...body, messages } };
}

/** Whether the request turns thinking off, or forces a tool without naming any thinking. */
function thinkingOff(body: JsonObject): boolean {
  return isJsonObject(body.thinking) ? body.thinking.type === 'disabled' : forcesTool(body);
}

/**
 * The messages without their thinking blocks, or undefined when none holds one. All go: leaving a
 * block out from between others invalidates the ones after it, and with thinking off the model
 * reads none of them.
 */
function withoutThinking(messages: unknown): unknown[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  let found = false;
  const kept = messages.map((message) => {
    if (!isJsonObject(message) || !Array.isArray(message.content)) return message;
    const content = message.content.filter((block) => !isThinkingBlock(block));
    if (content.length === message.content.length) return message;
    found = true;
    return { ...message, content };
  });
  return found ? kept : undefined;
}

function betasOf(headers: Headers): string[] {
  return (headers.get('anthropic-beta') ?? '')
    .split(',')
    .map((value) => value.trim())
    .filter((value) => value !== '');
}

/** Whether `anthropic-beta` names `beta`. */
export function hasBeta(headers: Headers, beta: string): boolean {
  return betasOf(headers).includes(beta);
}

/** `anthropic-beta` with `beta` added (once; the header is a comma-separated list). */
export function withBeta(headers: Headers, beta: string): void {
  const present = betasOf(headers);
  if (!present.includes(beta)) headers.set('anthropic-beta', [...present, beta].join(','));
}

/** `anthropic-beta` without `beta` (the header goes when nothing is left). */
export function withoutBeta(headers: Headers, beta: string): void {
  const left = betasOf(headers).filter((value) => value !== beta);
  if (left.length === 0) headers.delete('anthropic-beta');
  else headers.set('anthropic-beta', left.join(','));
}
