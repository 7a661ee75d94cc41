/**
 * The client-compaction signal. A client compacts its own conversation when the prompt size the
 * answers report nears its model's window (Claude Code, Codex, opencode and Cline all read the
 * last answer's usage). Behind the proxy the answers report the governed view, so that never
 * happens, and the conversation the client sends grows without bound: past
 * `governanceMaxBytes` it leaves through the stateless lane, past `bodyLimitBytes` it is refused.
 *
 * So once the prompt a client sends reaches `clientCompactionTokens`, its successful answers
 * report that prompt instead: the usage's uncached prompt tokens are raised to the size the
 * client sent (`WireDialect.withPromptUsage`; never lowered). No other field changes, though the
 * events that carry usage are written anew and a whole answer is serialized anew. The client then
 * compacts as it would without the proxy, and its compaction request is governed like any other.
 * Such an answer is flagged `client-compaction` in `x-selfgc-warnings` and counted in
 * `selfgc_proxy_client_compaction_signals_total`; the log keeps the usage the upstream reported
 * (`inputTokens`), not the raised one.
 */
import { exceedsJsonDepth } from '../core/json-depth.js';
import type { ProxyAnswer } from './proxy-exchange.js';
import { carriesUsage, isJsonObject, type JsonObject, type WireDialect } from './wire-dialect.js';

/** The warning code of a request whose answer reports the client's whole prompt. */
export const CLIENT_COMPACTION = 'client-compaction';

/**
 * The prompt size, in tokens, from which answers report the client's whole prompt by default:
 * beyond every model window clients compact for, and well inside what governance takes
 * (`DEFAULT_GOVERNANCE_MAX_BYTES` holds a conversation of about a million tokens).
 */
export const DEFAULT_CLIENT_COMPACTION_TOKENS = 1_000_000;

/**
 * Where one server-sent event ends: a line end, then an empty line, each in any of the line
 * endings SSE allows (CRLF, LF or CR, mixed too). A CR is a line end of its own only when no LF
 * follows it.
 */
const EVENT_END = /(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)/g;

/** One event's text (without its blank line) with the usage of its data raised, or as it came. */
function raiseEvent(event: string, dialect: WireDialect, tokens: number): string {
  const lines = event.split(/\r\n|\r|\n/);
  const dataLines = lines.flatMap((line, index) => (line.startsWith('data:') ? [index] : []));
  if (dataLines.length === 0) return event;
  const data = dataLines
    .map((index) => lines[index]!.slice(lines[index]!.startsWith('data: ') ? 6 : 5))
    .join('\n');
  const raised = raisePayload(data, dialect, tokens);
  if (raised === undefined) return event;
  const first = dataLines[0]!;
  const kept = lines.flatMap((line, index) =>
    index === first ? [`data: ${raised}`] : line.startsWith('data:') ? [] : [line],
  );
  return kept.join(event.includes('\r\n') ? '\r\n' : '\n');
}

/** A JSON text with its usage raised, or undefined when it has none to raise (or is not JSON). */
function raisePayload(text: string, dialect: WireDialect, tokens: number): string | undefined {
  if (!carriesUsage(text) || exceedsJsonDepth(text)) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return undefined;
  }
  const raised = isJsonObject(payload) ? dialect.withPromptUsage(payload as JsonObject, tokens) : undefined;
  return raised === undefined ? undefined : JSON.stringify(raised);
}

/**
 * An event stream with the usage of its events raised: each event goes on once it is whole (at
 * its blank line), untouched unless its data reports usage; the rest of a chunk waits for its end.
 */
export function raiseStreamUsage(
  source: ReadableStream<Uint8Array>,
  dialect: WireDialect,
  tokens: number,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  /** Length of `pending` already searched: an event's end (four characters at most) found anew. */
  let searched = 0;
  const whole = (final: boolean): string => {
    let out = '';
    let start = 0;
    EVENT_END.lastIndex = Math.max(0, searched - 3);
    for (let match = EVENT_END.exec(pending); match !== null; match = EVENT_END.exec(pending)) {
      const end = match.index + match[0].length;
      // A CR that ends what has come so far may be the first half of a CRLF.
      if (!final && end === pending.length && pending.endsWith('\r')) break;
      out += raiseEvent(pending.slice(start, match.index), dialect, tokens) + match[0];
      start = end;
    }
    // An event the stream ends without a blank line goes as it came.
    out += final ? pending.slice(start) : '';
    pending = final ? '' : pending.slice(start);
    searched = pending.length;
    return out;
  };
  return source.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        pending += decoder.decode(chunk, { stream: true });
        const out = whole(false);
        if (out !== '') controller.enqueue(encoder.encode(out));
      },
      flush(controller) {
        pending += decoder.decode();
        const out = whole(true);
        if (out !== '') controller.enqueue(encoder.encode(out));
      },
    }),
  );
}

/**
 * The answer to a request whose prompt was `tokens`, as the client gets it: with its usage
 * raised to `tokens` (streamed or whole) when it succeeded. Errors go as they came.
 */
export function withClientCompactionSignal(
  answer: ProxyAnswer,
  dialect: WireDialect,
  tokens: number,
): ProxyAnswer {
  const { body } = answer;
  if (answer.status < 200 || answer.status > 299 || body === null) return answer;
  if (body instanceof ReadableStream) return { ...answer, body: raiseStreamUsage(body, dialect, tokens) };
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const raised = raisePayload(text, dialect, tokens);
  return raised === undefined ? answer : { ...answer, body: raised };
}
