/**
 * The one structured log entry per request. It names the session only by a hash and never holds
 * an API key, a header value or message content.
 */
import type { ErrorCode } from '../core/errors.js';
import type { Arm } from './ab-split.js';

export interface ProxyLogEntry {
  /** ISO time the request arrived. */
  time: string;
  /** The id the client got in `x-selfgc-request-id` (and in error bodies). */
  requestId: string;
  method: string;
  /** Path without the query string. */
  path: string;
  /** `chat`, `responses`, `messages`, or `pass-through`. */
  route: string;
  arm: Arm;
  status: number;
  /** Until the last byte for streams, until the response for the rest. */
  latencyMs: number;
  upstreamMs?: number;
  /**
   * Time of the prepare step (parse, govern, write the body), in a governance worker or on the
   * proxy's thread, waits for the worker included: part of `latencyMs`.
   */
  prepareMs?: number;
  /** Hash of the namespaced session id. */
  session?: string;
  /** Where the session id came from: `explicit`, `cc`, `codex`, `opencode`, `pck` or `auto`. */
  sessionSource?: string;
  stream?: boolean;
  /** Prompt tokens of the request (messages, tool definitions, instructions) before governance. */
  tokensBefore?: number;
  /**
   * The same, as sent upstream (without the proxy's recovery tools, with its ledger message in
   * agent-tools mode); after recovery rounds, as the last of them was sent.
   */
  tokensAfter?: number;
  /** Set when both are upper bounds: the request was sent before its newest messages were counted. */
  tokensBound?: true;
  /** Output tokens the window kept free: the request's limit, or the configured reserve. */
  outputReserve?: number;
  commit?: string;
  /** What the governor did: `committed`, `deferred`, …, `fail-open`, `off`, `passthrough`. */
  governance?: string;
  /**
   * Why governance did not take the request and the stateless lane reduced it into the window
   * instead: `store-unavailable`, `governance-failed`, `over-size`, `over-time`.
   */
  lane?: string;
  /** Why the body went upstream ungoverned as the client sent it (`unreadable-shape`). */
  passthrough?: string;
  /** For an unreadable body, the adapter's account of where: message index and field, never content. */
  unreadable?: string;
  inputTokens?: number;
  cachedTokens?: number;
  recoveryCalls?: number;
  /** Tokens transparent recovery added to the last request sent upstream, beyond the view. */
  recoveredTokens?: number;
  /** Codes of the governor's and the proxy's warnings (never messages, which may quote content). */
  warnings?: string[];
  /** Where the history parted from the one governed before, when it did. */
  divergedAt?: number;
  /** How many committed object states stopped applying there. */
  droppedStates?: number;
  /** How a stream ended, when it did not complete. */
  outcome?: string;
  error?: ErrorCode;
  /**
   * The message of an error the client was not shown (store, upstream or internal failures,
   * fail-open included): for the operator only. Client input errors are not repeated here.
   */
  detail?: string;
  /** A one-time advice to the operator about the proxy's configuration (never request content). */
  notice?: string;
}

/** A logger writing one JSON line per entry. */
export function jsonLineLogger(write: (line: string) => void): (entry: ProxyLogEntry) => void {
  return (entry) => write(`${JSON.stringify(entry)}\n`);
}
