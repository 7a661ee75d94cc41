/**
 * The Messages API's rules for thinking blocks, as the scripted upstream enforces them, with the
 * API's own messages: an assistant message with thinking opens with it and does not end with it;
 * with thinking enabled, the assistant turn a request continues opens with thinking; a Claude
 * model's thinking block carries its signature (a redacted one its data); and a thinking block
 * comes back as the API gave it (the scripted upstream remembers the text of each signature it
 * issued, and refuses a block whose text changed: in the latest assistant message as the API's
 * errors page words it, "cannot be modified", in an earlier one as an invalid signature).
 * Signatures it never issued (a test's own fixtures) are not checked. For a model that binds
 * thinking to its prefix (Claude 5.1 on, `bindsThinking`) a block also comes back behind the
 * prefix it was produced after (`system`, `tools`, the messages before it, cache breakpoints
 * aside), unless the request asks, under the beta, to drop what a changed prefix invalidated;
 * `block_binding` without that beta is refused as an unknown field. A platform without those
 * controls checks no prefix and refuses their beta.
 */
import { createHash } from 'node:crypto';
import { bindsThinking, THINKING_BINDING_BETA } from '../adapters/index.js';
import type { ScriptedError } from './scripted-reply.js';

type Block = Record<string, unknown>;

const THINKING = new Set(['thinking', 'redacted_thinking']);

export interface ThinkingRules {
  /** The refusal of a Messages request (with its headers) that breaks a rule, or undefined. */
  refusal(body: Record<string, unknown>, headers: Record<string, string>): ScriptedError | undefined;
  /**
   * The signatures of the thinking blocks a request sends back behind another prefix than they
   * were produced after, which the API drops when asked to. Each block is judged by its own
   * prefix: a change invalidates the thinking after it, not what the model produced since.
   */
  invalidated(body: Record<string, unknown>): string[];
  /** Remembers the text a signature was issued for, in answer to `body`. */
  issued(signature: string, thinking: string, body: Record<string, unknown>): void;
}

/** What the API remembers of a thinking block it issued. */
interface Issued {
  thinking: string;
  /** For a model that binds thinking to its prefix: that prefix's fingerprint. */
  prefix?: string;
}

/** Content as the API reads it: a string is one text block. */
function blocksOfContent(content: unknown): unknown {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/**
 * The fingerprint of a block's prefix: `system`, `tools` and the messages before it, as the API
 * reads them (a string content is one text block), without the cache breakpoints a client moves
 * from request to request.
 */
function prefixOf(body: Record<string, unknown>, messages: readonly unknown[]): string {
  const read = messages.map((message) =>
    isRecord(message) ? { ...message, content: blocksOfContent(message.content) } : message,
  );
  const prefix = [blocksOfContent(body.system) ?? null, body.tools ?? null, read];
  const text = JSON.stringify(prefix, (key, value) => (key === 'cache_control' ? undefined : value));
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Whether the request asks the API to drop the thinking a changed prefix invalidated: under the
 * beta, with `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`.
 */
function dropsInvalidated(body: Record<string, unknown>): boolean {
  const binding = isRecord(body.thinking) ? body.thinking.block_binding : undefined;
  return isRecord(binding) && binding.prefix_mismatch_behavior === 'drop_block';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function betasOf(headers: Record<string, string>): string[] {
  return (headers['anthropic-beta'] ?? '').split(',').map((beta) => beta.trim());
}

function blocksOf(message: unknown): Block[] {
  if (typeof message !== 'object' || message === null) return [];
  const content = (message as Block).content;
  if (!Array.isArray(content)) return [];
  return content.filter((block): block is Block => typeof block === 'object' && block !== null);
}

function roleOf(message: unknown): unknown {
  return typeof message === 'object' && message !== null ? (message as Block).role : undefined;
}

function refused(message: string): ScriptedError {
  return { status: 400, message };
}

export interface ThinkingRulesOptions {
  /**
   * Whether the platform has the preserved-thinking controls (default true). Without them (as
   * Bedrock for a model that lacks them) it checks no block's prefix, refuses a request naming
   * their beta (`invalid beta flag`), and knows no `block_binding` field.
   */
  binding?: boolean;
}

export function createThinkingRules(options: ThinkingRulesOptions = {}): ThinkingRules {
  const binding = options.binding ?? true;
  const texts = new Map<string, Issued>();
  const invalidated = (body: Record<string, unknown>): string[] => {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    return messages.flatMap((message, index) =>
      blocksOf(message).flatMap((block) => {
        const issued = typeof block.signature === 'string' ? texts.get(block.signature) : undefined;
        if (block.type !== 'thinking' || issued?.prefix === undefined) return [];
        return issued.prefix === prefixOf(body, messages.slice(0, index)) ? [] : [String(block.signature)];
      }),
    );
  };
  return {
    issued(signature, thinking, body) {
      const messages = Array.isArray(body.messages) ? body.messages : [];
      const binds = binding && typeof body.model === 'string' && bindsThinking(body.model);
      texts.set(signature, binds ? { thinking, prefix: prefixOf(body, messages) } : { thinking });
    },
    invalidated,
    refusal(body, headers) {
      const messages = Array.isArray(body.messages) ? body.messages : [];
      const thinkingSetting = isRecord(body.thinking) ? body.thinking : undefined;
      const betaNamed = betasOf(headers).includes(THINKING_BINDING_BETA);
      if (betaNamed && !binding) return refused('invalid beta flag');
      if (thinkingSetting?.block_binding !== undefined && !betaNamed)
        return refused(
          `thinking.${String(thinkingSetting.type)}.block_binding: Extra inputs are not permitted`,
        );
      const latest = messages.findLastIndex((message) => roleOf(message) === 'assistant');
      // Anthropic's own models; a compatible provider's (DeepSeek, Kimi) takes unsigned thinking.
      const signed = typeof body.model === 'string' && /claude/i.test(body.model);
      // Blocks behind a changed prefix, unless the request asks to drop them.
      const unbound = dropsInvalidated(body) ? [] : invalidated(body);
      for (const [index, message] of messages.entries()) {
        if (roleOf(message) !== 'assistant') continue;
        const blocks = blocksOf(message);
        if (!blocks.some((block) => THINKING.has(String(block.type)))) continue;
        const first = String(blocks[0]!.type);
        if (!THINKING.has(first))
          return refused(
            `messages.${index}.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found ${first}.`,
          );
        if (THINKING.has(String(blocks[blocks.length - 1]!.type)))
          return refused(
            `messages.${index}: The final block in an assistant message cannot be \`thinking\`.`,
          );
        for (const [position, block] of blocks.entries()) {
          const missing =
            block.type === 'thinking' ? 'signature' : block.type === 'redacted_thinking' ? 'data' : undefined;
          if (signed && missing !== undefined && typeof block[missing] !== 'string')
            return refused(
              `messages.${index}.content.${position}.${String(block.type)}.${missing}: Field required`,
            );
          if (block.type !== 'thinking' || typeof block.signature !== 'string') continue;
          const issued = texts.get(block.signature);
          if (unbound.includes(block.signature))
            return refused(
              `messages.${index}.content.${position}: Invalid \`signature\` in \`thinking\` block. The block is bound to a different conversation. Remove the block, or set \`thinking.block_binding.prefix_mismatch_behavior\` to "drop_block".`,
            );
          if (issued !== undefined && issued.thinking !== block.thinking)
            return refused(
              index === latest
                ? `messages.${index}.content.${position}: \`thinking\` or \`redacted_thinking\` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.`
                : `messages.${index}.content.${position}: Invalid \`signature\` in \`thinking\` block`,
            );
        }
      }
      return enabledThinkingRefusal(body, messages);
    },
  };
}

/**
 * With thinking enabled, a request whose last user message answers tool calls continues the
 * assistant turn that opened after the last prompt (a user message without tool results): that
 * turn's first message must open with thinking (the later ones, rounds of the same turn, may not).
 */
function enabledThinkingRefusal(
  body: Record<string, unknown>,
  messages: unknown[],
): ScriptedError | undefined {
  const thinking = body.thinking;
  if (typeof thinking !== 'object' || thinking === null || (thinking as Block).type !== 'enabled')
    return undefined;
  const answersCalls = (message: unknown) =>
    roleOf(message) === 'user' && blocksOf(message).some((block) => block.type === 'tool_result');
  if (!answersCalls(messages.at(-1))) return undefined;
  const prompt = messages.findLastIndex((message) => roleOf(message) === 'user' && !answersCalls(message));
  const opening = prompt + 1;
  if (roleOf(messages[opening]) !== 'assistant') return undefined;
  const first = blocksOf(messages[opening])[0];
  if (first !== undefined && THINKING.has(String(first.type))) return undefined;
  return refused(
    `messages.${opening}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type ?? 'text')}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
  );
}
