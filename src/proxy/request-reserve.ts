/**
 * What a request needs of the window beyond its transcript: the prompt the model reads besides
 * the messages (tool definitions, Responses `instructions`, output schemas, and the tools the
 * proxy may add for recovery), room for the answer, and room for the pages recovery may append.
 * The governor fits the view into the window less this reserve, so the whole request stays inside
 * the window, and so does every request recovery sends after it.
 */
import type { TokenCounter } from '../core/tokens.js';
import { recoveryReserve } from './recovery-budget.js';
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
  /**
   * Tools the proxy may add to the request (recovery), in neutral form. With them, room is kept
   * for the pages recovery appends.
   */
  proxyTools: readonly ToolDefinition[];
}

export interface RequestReserve {
  /** Tokens of what the client sends besides the transcript (tool definitions, instructions, …). */
  promptTokens: number;
  /** Tokens of the proxy's own tools, when it may add them. */
  proxyToolTokens: number;
  /** The request's output limit, or the configured or default reserve when it names none. */
  outputTokens: number;
  /** Room kept free for recovered pages, when the proxy may answer recovery calls. */
  recoveryTokens: number;
  /** Everything the window must keep free besides the view. */
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
  const beside = promptTokens + proxyToolTokens + outputTokens;
  const recoveryTokens = input.proxyTools.length === 0 ? 0 : recoveryReserve(input.window - beside);
  return { promptTokens, proxyToolTokens, outputTokens, recoveryTokens, total: beside + recoveryTokens };
}
