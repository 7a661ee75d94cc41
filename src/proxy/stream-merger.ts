/**
 * The contract of a stream merger: the streamed answers of several upstream calls (the first
 * one, then one per recovery round) become one answer in the route's own event grammar, so that
 * the client's SDK accumulates a single coherent message. Text and reasoning go out as they
 * arrive; tool calls are held until the round ends, when it is known whether the proxy answers
 * them (the round goes on upstream) or the client does (the answer ends here). Reasoning the
 * provider keeps by id waits for the item after it (`round-blocks.ts`), and a round whose items
 * the provider keeps gives the client only what keeps them in pairs (`responses-stream-merger.ts`).
 */
import type { JsonObject } from './wire-dialect.js';

/**
 * What closes an answer the proxy took calls out of (a round went on upstream, or the last one
 * called its tools with no room or rounds left) when nothing else would: an assistant message
 * with no content (or, on Messages, one that ends in thinking) is refused when the client sends
 * it back.
 */
export const UNFINISHED_TURN_NOTE =
  '[selfgc: no room was left in the context window for the content this turn asked for; go on with what is shown.]';

/** One server-sent event; `data` is one JSON text (or `[DONE]`). */
export interface SseMessage {
  event?: string;
  data: string;
}

export interface StreamMergerOptions {
  /** Whether a tool is the proxy's own: its calls never reach the client. */
  isInternal(name: string): boolean;
  /**
   * What of the client's request shapes its answer: the tool choice it sent (echoed back) and
   * its `store` (whether the provider keeps the answer's items).
   */
  client: JsonObject;
  /**
   * Where the provider keeps the answer under another id than the one the client got (a later
   * round's): called when the answer closes, with both.
   */
  onStored?(shown: string, stored: string): void;
}

/** How one upstream round's stream ended. */
export type RoundEnd =
  /** The round's whole answer, in the route's non-streamed shape. */
  | { kind: 'answered'; answer: JsonObject }
  /** The upstream sent its error event; it already went to the client, which ends there. */
  | { kind: 'failed' }
  /** The stream stopped before its last event. */
  | { kind: 'cut' };

/**
 * Why an answer ends before its end: the error as the provider's HTTP answer would carry it
 * (`{type: 'error', error}` or `{error}`), the upstream's own or the proxy's, and that answer's
 * status.
 */
export interface StreamFailure {
  status: number;
  body: JsonObject;
}

export interface StreamMerger {
  /** One event of the current round; returns what the client gets now. */
  push(message: SseMessage): SseMessage[];
  /** The current round's stream is over: its answer, or why there is none. */
  endRound(): RoundEnd;
  /**
   * The round called the proxy's tools and the answer goes on upstream: none of the round's
   * tool calls reach the client (the model re-issues the ones it still needs); what else it held
   * goes out now, and the next round's events continue the same answer.
   */
  continueRound(): SseMessage[];
  /** The round is the last: the client's own held tool calls, then the closing events. */
  finish(): SseMessage[];
  /** The answer fails before its end: the route's events that end the client stream with it. */
  fail(failure: StreamFailure): SseMessage[];
}

/** Server-sent events as text, one `data:` line per line of data. */
export function encodeSse(messages: readonly SseMessage[]): string {
  let text = '';
  for (const message of messages) {
    if (message.event !== undefined) text += `event: ${message.event}\n`;
    for (const line of message.data.split('\n')) text += `data: ${line}\n`;
    text += '\n';
  }
  return text;
}

/** The JSON object an event carries, or undefined (`[DONE]`, anything unreadable). */
export function payloadOf(message: SseMessage): JsonObject | undefined {
  if (!message.data.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(message.data);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as JsonObject)
      : undefined;
  } catch {
    return undefined;
  }
}

/** An event with a new payload, under the same event name. */
export function eventOf(message: SseMessage, payload: JsonObject): SseMessage {
  const data = JSON.stringify(payload);
  return message.event === undefined ? { data } : { event: message.event, data };
}
