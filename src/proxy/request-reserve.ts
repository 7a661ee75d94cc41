/**
 * What a request needs of the window beyond its transcript: the prompt the model reads besides
 * the messages (tool definitions, Responses `instructions`, output schemas, and the tools the
 * proxy may add for recovery) and room for the answer. The governor fits the view into the
 * window less this reserve, so the whole request stays inside the window.
 */
import type { TokenCounter } from '../core/tokens.js';
import type { JsonObject, ToolDefinition, WireDialect } from './wire-dialect.js';

/**
 * Output tokens kept free when a request names no output limit and none is configured: room for
 * a long answer or a large edit (a reasoning model's thinking counts here too), and never more
 * than a quarter of the window, so that a small window still holds a conversation.
 */
export const DEFAULT_OUTPUT_RESERVE = 16_384;

export interface ReserveInput {
  dialect: WireDialect;
  body: JsonObject;
  window: number;
  tokenCounter: TokenCounter;
  /** Output tokens to keep free when the request names none (`--reserve-output`). */
  reserveOutput?: number;
  /** Tools the proxy may add to the request (recovery), in neutral form. */
  proxyTools: readonly ToolDefinition[];
}

export interface RequestReserve {
  /** Tokens of what the client sends besides the transcript (tool definitions, instructions, …). */
  promptTokens: number;
  /** Tokens of the proxy's own tools, when it may add them. */
  proxyToolTokens: number;
  /** The request's output limit, or the configured or default reserve when it names none. */
  outputTokens: number;
  /** Everything the window must keep free besides the messages. */
  total: number;
}

/** The default output reserve of a window that the request does not override. */
export function defaultOutputReserve(window: number, reserveOutput?: number): number {
  return reserveOutput ?? Math.min(DEFAULT_OUTPUT_RESERVE, Math.floor(window / 4));
}

export function reserveOf(input: ReserveInput): RequestReserve {
  const { dialect, body, tokenCounter } = input;
  let promptTokens = 0;
  for (const text of dialect.promptBesideTranscript(body)) promptTokens += tokenCounter.count(text);
  const added = input.proxyTools.length === 0 ? undefined : dialect.withTools({}, input.proxyTools).tools;
  const proxyToolTokens = added === undefined ? 0 : tokenCounter.count(JSON.stringify(added));
  const outputTokens = dialect.outputLimit(body) ?? defaultOutputReserve(input.window, input.reserveOutput);
  return {
    promptTokens,
    proxyToolTokens,
    outputTokens,
    total: promptTokens + proxyToolTokens + outputTokens,
  };
}
