/**
 * The one structured log entry per request. It names the session only by a hash and never holds
 * an API key, a header value or message content.
 */
import type { ErrorCode } from '../core/errors.js';
import type { Arm } from './ab-split.js';

export interface ProxyLogEntry {
  /** ISO time the request arrived. */
  time: string;
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
  /** Hash of the namespaced session id. */
  session?: string;
  stream?: boolean;
  tokensBefore?: number;
  tokensAfter?: number;
  commit?: string;
  /** What the governor did: `committed`, `deferred`, …, `fail-open`, `off`, `passthrough`. */
  governance?: string;
  /** Why the body went upstream ungoverned as the client sent it (`unreadable-shape`). */
  passthrough?: string;
  /** For an unreadable body, the adapter's account of where: message index and field, never content. */
  unreadable?: string;
  inputTokens?: number;
  cachedTokens?: number;
  recoveryCalls?: number;
  /** Codes of the governor's warnings (never their messages, which may quote content). */
  warnings?: string[];
  /** How a stream ended, when it did not complete. */
  outcome?: string;
  error?: ErrorCode;
}

/** A logger writing one JSON line per entry. */
export function jsonLineLogger(write: (line: string) => void): (entry: ProxyLogEntry) => void {
  return (entry) => write(`${JSON.stringify(entry)}\n`);
}
