/**
 * The fork planner's copy of the agent's request: the agent's view written by the same adapter
 * the proxy and the integrations write it with, so that its bytes are the agent's own and the
 * provider serves them from its prompt cache. Anthropic caches only up to a breakpoint, so the
 * fork marks the end of the agent's messages (the planner's instruction comes after it, uncached);
 * OpenAI-compatible servers cache prefixes by themselves.
 */
import { limitCacheBreakpoints, toAnthropicMessages, toOpenAIChat } from '../adapters/index.js';
import { joinUserRuns } from '../adapters/openai-chat/alternating-turns.js';
import type { Message } from '../core/transcript.js';
import type { LlmFork, LlmProvider } from './llm-types.js';

/** The breakpoint the fork places: the default five-minute cache, as an agent's own would be. */
const FORK_BREAKPOINT = { type: 'ephemeral' } as const;

/**
 * The agent's `view` as `provider` takes it. What the format cannot carry (the adapters'
 * warnings) the agent's own request lost the same way, so the fork says nothing of it.
 * `tools`: the agent's tool definitions in that provider's format, when the caller knows them;
 * without them an Anthropic fork declares the tools its messages call, by name only, since the
 * API refuses tool blocks without tool definitions (tools are the first part of the cached
 * prefix, so the fork then shares its cache with earlier forks, not with the agent).
 * `transcript`: the agent's own messages, when the caller knows them: where they alternate, so do
 * the fork's OpenAI messages, as the proxy and the integrations write the view (`joinUserRuns`).
 */
export function writeFork(
  provider: LlmProvider,
  view: readonly Message[],
  tools?: readonly unknown[],
  transcript?: readonly Message[],
): LlmFork {
  if (provider === 'openai') {
    const written = toOpenAIChat([...view]).messages;
    const alternates =
      transcript !== undefined &&
      !transcript.some((message, index) => message.role === 'user' && transcript[index - 1]?.role === 'user');
    return { messages: alternates ? joinUserRuns(written) : written, ...(tools ? { tools } : {}) };
  }
  const written = toAnthropicMessages([...view]);
  const declared = tools ?? declaredTools(written.messages);
  const marked = withBreakpointAtEnd(written.messages);
  // The agent's own breakpoints stay, ours is the latest; past the API's four the earliest go.
  const body = { system: written.system, messages: marked, ...(declared ? { tools: declared } : {}) };
  const limited = limitCacheBreakpoints(body, body);
  return {
    ...(limited.system !== undefined ? { system: limited.system } : {}),
    messages: limited.messages,
    ...(declared ? { tools: declared } : {}),
  };
}

/**
 * The messages with a breakpoint on the last block that can hold one (not thinking, not empty
 * text), unless that block has one already (the agent's own, whatever its TTL). A string content
 * becomes the one text block it stands for, which the API reads as the same prompt.
 */
function withBreakpointAtEnd(messages: readonly unknown[]): unknown[] {
  const copy = [...messages];
  const last = copy.at(-1);
  if (!isRecord(last)) return copy;
  if (typeof last.content === 'string') {
    if (last.content === '') return copy;
    copy[copy.length - 1] = {
      ...last,
      content: [{ type: 'text', text: last.content, cache_control: FORK_BREAKPOINT }],
    };
    return copy;
  }
  if (!Array.isArray(last.content)) return copy;
  const blocks = [...last.content];
  for (let index = blocks.length - 1; index >= 0; index -= 1) {
    const block = blocks[index];
    if (!canHoldBreakpoint(block)) continue;
    if (isRecord(block.cache_control)) return copy;
    blocks[index] = { ...block, cache_control: FORK_BREAKPOINT };
    copy[copy.length - 1] = { ...last, content: blocks };
    return copy;
  }
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function canHoldBreakpoint(block: unknown): block is Record<string, unknown> {
  if (!isRecord(block)) return false;
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return false;
  return !(block.type === 'text' && block.text === '');
}

/** One definition per tool the messages call, by name, in name order; none without calls. */
function declaredTools(messages: readonly unknown[]): unknown[] | undefined {
  const names = new Set<string>();
  for (const message of messages) {
    if (!isRecord(message) || !Array.isArray(message.content)) continue;
    for (const block of message.content)
      if (isRecord(block) && block.type === 'tool_use' && typeof block.name === 'string')
        names.add(block.name);
  }
  if (names.size === 0) return undefined;
  return [...names].sort().map((name) => ({
    name,
    description: 'A tool the agent called in the conversation above.',
    input_schema: { type: 'object' },
  }));
}
