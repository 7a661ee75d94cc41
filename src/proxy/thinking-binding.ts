/**
 * Thinking blocks bound to their prefix (Anthropic's preserved thinking): from Claude 5.1 on, the
 * API checks that nothing before a thinking block a request sends back (`system`, `tools`, the
 * messages before it) changed since the block was produced, and by default on newer accounts
 * refuses a request that fails the check with a 400 ("The block is bound to a different
 * conversation"). Governance changes exactly that prefix: a commit folds earlier messages, and
 * the recovery tools join `tools`. So a request the proxy changed, to such a model, with thinking
 * blocks in it, asks the API to drop the blocks the change invalidated instead
 * (`thinking.block_binding.prefix_mismatch_behavior: "drop_block"`, under its beta header). The
 * blocks a change leaves valid (those before it, and those produced since) stay in use.
 */
import { bindsThinking, THINKING_BINDING_BETA } from '../adapters/index.js';
import { isJsonObject, type JsonObject } from './wire-dialect.js';

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
 * thinking turned off (the API's remedy is then to remove the blocks, which the proxy leaves to
 * the client), or no thinking setting in a request that forces a tool. A request without a
 * `thinking` setting otherwise gets adaptive thinking, these models' default.
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

/** `anthropic-beta` with `beta` added (once; the header is a comma-separated list). */
export function withBeta(headers: Headers, beta: string): void {
  const present = (headers.get('anthropic-beta') ?? '')
    .split(',')
    .map((value) => value.trim())
    .filter((value) => value !== '');
  if (!present.includes(beta)) headers.set('anthropic-beta', [...present, beta].join(','));
}
