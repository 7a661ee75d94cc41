/**
 * Checks of one model request as a provider would receive it: tool calls and results in whole
 * pairs, at most four prompt-cache breakpoints, and the whole request within the window.
 * Each returns the problems it found, in words that say where (an empty list when it is sound).
 */
import { MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from '../src/core/tokens.js';
import type { WireRequest, WireTurn } from './read-wire-request.js';

/** Anthropic accepts at most four `cache_control` breakpoints per request. */
export const MAX_CACHE_BREAKPOINTS = 4;

/** Where the trailing model turns start: calls there may still wait for their results. */
function lastModelTurnStart(turns: readonly WireTurn[]): number {
  let start = turns.length;
  while (start > 0 && turns[start - 1]!.role === 'assistant') start -= 1;
  return start;
}

function describe(index: number, turn: WireTurn): string {
  return `turn ${index} (${turn.role})`;
}

/**
 * Anthropic Messages: the results of a turn's tool calls come in the very next message, and
 * every result answers a call of the message right before it.
 */
function checkMessagesPairs(turns: readonly WireTurn[]): string[] {
  const problems: string[] = [];
  turns.forEach((turn, index) => {
    const previous = turns[index - 1];
    const called = new Set(previous?.role === 'assistant' ? previous.calls.map((call) => call.id) : []);
    for (const result of turn.results) {
      if (!called.has(result.id))
        problems.push(
          `${describe(index, turn)}: tool result ${result.id} answers no call of the turn before it`,
        );
    }
    if (turn.calls.length === 0 || index === turns.length - 1) return;
    const answered = new Set((turns[index + 1]?.results ?? []).map((result) => result.id));
    for (const call of turn.calls) {
      if (!answered.has(call.id))
        problems.push(
          `${describe(index, turn)}: tool call ${call.id} (${call.name}) has no result in the next turn`,
        );
    }
  });
  return problems;
}

/**
 * Chat Completions: an assistant message with `tool_calls` is followed by one `tool` message per
 * call before anything else, and every `tool` message answers a call of that assistant message.
 */
function checkChatPairs(turns: readonly WireTurn[]): string[] {
  const problems: string[] = [];
  let open = new Map<string, string>();
  let owner = -1;
  turns.forEach((turn, index) => {
    if (turn.role === 'tool') {
      for (const result of turn.results) {
        if (!open.delete(result.id))
          problems.push(
            `${describe(index, turn)}: tool result ${result.id} answers no call of the assistant turn before it`,
          );
      }
      return;
    }
    for (const [id, name] of open)
      problems.push(
        `turn ${owner} (assistant): tool call ${id} (${name}) has no result before turn ${index}`,
      );
    open = new Map(turn.calls.map((call) => [call.id, call.name]));
    owner = index;
  });
  // Calls of the last turn may still wait for their results; calls answered only in part may not.
  if (owner !== turns.length - 1) {
    for (const [id, name] of open)
      problems.push(`turn ${owner} (assistant): tool call ${id} (${name}) has no result`);
  }
  return problems;
}

/** Responses: every `function_call` has its output later in the input, every output its call before it. */
function checkResponsesPairs(turns: readonly WireTurn[]): string[] {
  const problems: string[] = [];
  const called = new Map<string, number>();
  const answered = new Set<string>();
  turns.forEach((turn, index) => {
    for (const call of turn.calls) called.set(call.id, index);
    for (const result of turn.results) {
      if (!called.has(result.id))
        problems.push(`${describe(index, turn)}: tool result ${result.id} answers no earlier call`);
      answered.add(result.id);
    }
  });
  const waiting = lastModelTurnStart(turns);
  for (const [id, index] of called) {
    if (!answered.has(id) && index < waiting)
      problems.push(`${describe(index, turns[index]!)}: tool call ${id} has no result`);
  }
  return problems;
}

/** Tool calls and results in whole pairs: no orphan result, no call without a result except the last turn's. */
export function checkToolPairs(request: WireRequest): string[] {
  if (request.route === 'messages') return checkMessagesPairs(request.turns);
  if (request.route === 'chat') return checkChatPairs(request.turns);
  return checkResponsesPairs(request.turns);
}

export function checkCacheBreakpoints(request: WireRequest): string[] {
  if (request.cacheBreakpoints <= MAX_CACHE_BREAKPOINTS) return [];
  return [`${request.cacheBreakpoints} cache_control breakpoints (at most ${MAX_CACHE_BREAKPOINTS})`];
}

/** A request's size in tokens, by part. */
export interface RequestSize {
  system: number;
  messages: number;
  tools: number;
  /** The output reserve (`max_tokens` and its kin), 0 when the request sets none. */
  reserve: number;
  total: number;
}

/**
 * The whole request as the window must hold it: system prompt, every turn (text, tool calls,
 * tool results, plus the per-message framing the project counts), tool definitions as sent, and
 * the output reserve.
 */
export function measureRequest(request: WireRequest, counter: TokenCounter): RequestSize {
  const system = counter.count(request.system);
  let messages = 0;
  for (const turn of request.turns) {
    messages += MESSAGE_OVERHEAD_TOKENS + counter.count(turn.text);
    for (const call of turn.calls) messages += counter.count(call.name) + counter.count(call.arguments);
    for (const result of turn.results) messages += counter.count(result.text);
  }
  const tools = request.tools.reduce((sum, tool) => sum + counter.count(tool.json), 0);
  const reserve = request.maxOutputTokens ?? 0;
  return { system, messages, tools, reserve, total: system + messages + tools + reserve };
}

export function describeSize(size: RequestSize): string {
  return `${size.total} tokens (system ${size.system}, messages ${size.messages}, tools ${size.tools}, output reserve ${size.reserve})`;
}

export function checkWindow(request: WireRequest, counter: TokenCounter, window: number): string[] {
  const size = measureRequest(request, counter);
  if (size.total <= window) return [];
  return [`${describeSize(size)} over the window of ${window}`];
}
