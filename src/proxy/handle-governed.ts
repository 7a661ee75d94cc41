/**
 * A governed route (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`): read and check
 * the body, govern it, forward it with the client's headers, and answer with the upstream's
 * answer (streamed through, or after transparent recovery) plus the `x-selfgc-*` headers.
 */
import { exceedsJsonDepth } from '../core/json-depth.js';
import { tokensForChars } from '../core/tokens.js';
import { chooseArm } from './ab-split.js';
import {
  callUpstream,
  clientResponseHeaders,
  type UpstreamCall,
  upstreamRequestHeaders,
} from './call-upstream.js';
import { CLIENT_COMPACTION, withClientCompactionSignal } from './client-compaction-signal.js';
import { decodeBody } from './content-coding.js';
import { usageHolderOf } from './json-layout.js';
import {
  markPassThrough,
  type PreparedUpstream,
  prepareUpstream,
  UNREADABLE_ENCODING,
} from './prepare-upstream.js';
import { publicError, REQUEST_ID_HEADER } from './proxy-errors.js';
import type { ProxyAnswer, ProxyRequest } from './proxy-exchange.js';
import type { ProxySettings } from './proxy-options.js';
import { decodeBodyText, encodeBodyText, joinChunks } from './read-body-bytes.js';
import { type RefusedBeta, unlessRefused } from './refused-betas.js';
import { addWarnings, createRequestTrace, type RequestTrace } from './request-trace.js';
import { namespaceOf } from './session-identity.js';
import { CONTINUED_FROM_LAST_ROUND } from './stored-responses.js';
import type { StreamMerger } from './stream-merger.js';
import { streamRecovery } from './stream-recovery.js';
import { tapEventStream } from './tap-event-stream.js';
import { hasBeta, withBeta, withoutBeta } from './thinking-binding.js';
import {
  type BufferedAnswer,
  createRecovery,
  isRecoveryTool,
  type Recovery,
  recoverTransparently,
} from './transparent-recovery.js';
import {
  eventUsage,
  isJsonObject,
  type JsonObject,
  type RefusalRemedy,
  type TokenUsage,
  type WireDialect,
} from './wire-dialect.js';

interface Exchange {
  settings: ProxySettings;
  dialect: WireDialect;
  request: ProxyRequest;
  trace: RequestTrace;
  /** The `x-selfgc-*` headers of the answer. */
  headers: Headers;
  /** The client's headers as they go upstream (without the body's coding once it is decoded). */
  forwarded: Headers;
  /** The request's namespace (`namespaceOf`). */
  keyHash: string;
  /**
   * Betas the proxy adds that the upstream refused, in this namespace, by model
   * (`refused-betas.ts`): the request's rounds go without them.
   */
  refusedBetas: readonly RefusedBeta[];
  /**
   * The prompt the client sent, once it reaches `clientCompactionTokens`: a successful answer
   * reports it (`client-compaction-signal.ts`).
   */
  reportedTokens?: number;
}

/**
 * The warning of an answer to a body the upstream refused once, and the proxy sent again as the
 * dialect remedied it (`WireDialect.afterRefusal`).
 */
export const SENT_AGAIN_AFTER_REFUSAL = 'sent-again-after-refusal';

/** Logged once, with the first keyless request, when nothing tells keyless clients apart. */
export const KEYLESS_NOTICE =
  'requests without an API key share one session namespace, so transparent recovery (sidecar reads) is off for them; ' +
  'give each client its own with the tenancy option (selfgc proxy --tenant-header NAME or --tenant-from-address)';

export async function handleGoverned(
  settings: ProxySettings,
  dialect: WireDialect,
  request: ProxyRequest,
): Promise<ProxyAnswer> {
  const { keyHash, shared } = namespaceOf(request.headers, settings.tenancy, request.remoteAddress);
  const arm = chooseArm(keyHash, settings.abSplit);
  const trace = createRequestTrace(settings, request, dialect.route, arm);
  // Keyless clients in one shared namespace must not read each other's sidecars.
  const recoveryAllowed = settings.recovery && !shared;
  if (settings.recovery && shared && settings.firstNotice('keyless')) trace.entry.notice = KEYLESS_NOTICE;
  const headers = new Headers({ 'x-selfgc-arm': arm, [REQUEST_ID_HEADER]: trace.requestId });
  const forwarded = upstreamRequestHeaders(request.headers);
  const refusedBetas = settings.refusedBetas.of(keyHash);
  const exchange: Exchange = {
    settings,
    dialect,
    request,
    trace,
    headers,
    forwarded,
    keyHash,
    refusedBetas,
  };
  try {
    const received = await request.chunks(settings.bodyLimitBytes);
    const coding = request.headers.get('content-encoding');
    const body = await decodeBody(received, coding, settings.bodyLimitBytes, keyHash);
    if (body === undefined) {
      markPassThrough(exchange, UNREADABLE_ENCODING, `content-encoding: ${coding}`.slice(0, 100));
      return await forward(exchange, joinChunks(received));
    }
    if (body !== received) forwarded.delete('content-encoding');
    // A body over governance's budget never waits for it: the stateless lane takes it.
    const lane =
      settings.governs && body.byteLength > settings.governanceMaxBytes ? ('over-size' as const) : undefined;
    const input = {
      dialect,
      requestHeaders: request.headers,
      keyHash,
      trace,
      headers,
      signal: request.signal,
      lane,
      refusedBetas,
    };
    const prepareStarted = settings.now();
    const prepared =
      settings.governance === undefined
        ? await prepareUpstream({
            ...input,
            bytes: joinChunks(body),
            settings: { ...settings, recovery: recoveryAllowed },
            transcripts: settings.transcripts,
          })
        : await settings.governance.prepare(
            {
              ...input,
              // Joined there (the lane worker joins a body too big to govern).
              body,
              failOpen: settings.failOpen,
              recovery: recoveryAllowed,
              agentTools: settings.agentTools,
              timeBudgetMs: settings.governanceTimeBudgetMs,
            },
            settings.metrics,
          );
    trace.entry.prepareMs = Math.round((settings.now() - prepareStarted) * 1000) / 1000;
    if (prepared.beta !== undefined) withBeta(forwarded, prepared.beta);
    // Governed on this thread: what it left uncounted is counted once the body is sent.
    if (prepared.settle !== undefined) setImmediate(prepared.settle);
    const reported = clientCompactionSignal(exchange, body.byteLength);
    const { recovery: recovered, governor } = prepared;
    if (recovered === undefined || governor === undefined)
      return reported(await forward(exchange, continuingStored(exchange, keyHash, prepared)));
    // The body the rounds build on: the one that went, remedied when the upstream refused it once.
    let remedied: JsonObject | undefined;
    const recovery = createRecovery({
      dialect,
      governor,
      sessionId: recovered.sessionId,
      body: () => remedied ?? (JSON.parse(decodeBodyText(prepared.body)) as JsonObject),
      client: recovered.client,
      window: recovered.window,
      counter: settings.tokenCounterFor(dialect.provider),
      maxRounds: settings.recoveryRounds,
      onInternalCall: (tool) => {
        trace.entry.recoveryCalls = (trace.entry.recoveryCalls ?? 0) + 1;
        settings.metrics.count('selfgc_proxy_recovery_calls_total', { arm, tool });
      },
    });
    const sent = await send(exchange, prepared.body);
    remedied = sent.remedied;
    if (eventStreamOf(sent.call) !== null) {
      const merger = dialect.mergeStreams({
        isInternal: isRecoveryTool,
        client: recovered.client,
        onStored: (shown, stored) => settings.storedResponses.note(keyHash, shown, stored),
      });
      return reported(
        answerStreamed(exchange, sent, { recovery, merger, viewTokens: recovered.window.viewTokens }),
      );
    }
    const first = await readAnswer(exchange, sent);
    const answer = await recoverTransparently(recovery, first, (next) =>
      sendBuffered(exchange, roundBody(exchange, next)),
    );
    noteRecoveredTokens(exchange, recovery, recovered.window.viewTokens);
    return reported(answerBuffered(exchange, { ...answer, body: answer.text }));
  } catch (error) {
    return trace.fail(error, dialect.provider, headers);
  }
}

/**
 * The body to send of a request governance left as it came: one continuing an answer the proxy
 * merged goes on from the response that closed it (`stored-responses.ts`). Only such a body is
 * parsed again here: the rest go as their bytes, unread on the proxy's thread.
 */
function continuingStored(exchange: Exchange, scope: string, prepared: PreparedUpstream): Uint8Array {
  const { dialect, settings } = exchange;
  const shown = prepared.continues;
  const stored = shown === undefined ? undefined : settings.storedResponses.storedFor(scope, shown);
  if (stored === undefined || dialect.continuingStored === undefined) return prepared.body;
  addWarnings(exchange.headers, exchange.trace.entry, [CONTINUED_FROM_LAST_ROUND]);
  const body = JSON.parse(decodeBodyText(prepared.body)) as JsonObject;
  return encodeBodyText(JSON.stringify(dialect.continuingStored(body, stored)));
}

/**
 * What the client gets of its answer: as it came, or, once the prompt it sent reaches
 * `clientCompactionTokens`, with that prompt reported as the usage, so that it compacts
 * (`client-compaction-signal.ts`). Such an answer is flagged, logged and counted by
 * `answerHeaders`, when it succeeded: an error, or a failure of the proxy's own, reports nothing.
 */
function clientCompactionSignal(exchange: Exchange, bodyBytes: number): (answer: ProxyAnswer) => ProxyAnswer {
  const { settings, dialect, trace } = exchange;
  const { tokensBefore, tokensBound } = trace.entry;
  // An upper bound (texts sized by their bytes) can be several times the prompt: the body's
  // bytes over four, the approximate count, when that is less.
  const tokens =
    tokensBefore === undefined || tokensBound !== true
      ? tokensBefore
      : Math.min(tokensBefore, tokensForChars(bodyBytes));
  const threshold = settings.clientCompactionTokens;
  if (tokens === undefined || threshold === undefined || tokens < threshold) return (answer) => answer;
  exchange.reportedTokens = tokens;
  return (answer) => withClientCompactionSignal(answer, dialect, tokens);
}

/** Flag, log and count an answer that reports the client's whole prompt (a successful one). */
function noteClientCompaction(exchange: Exchange, status: number): void {
  const { settings, dialect, trace, headers } = exchange;
  if (exchange.reportedTokens === undefined || status < 200 || status > 299) return;
  addWarnings(headers, trace.entry, [CLIENT_COMPACTION]);
  settings.metrics.count('selfgc_proxy_client_compaction_signals_total', {
    arm: trace.arm,
    route: dialect.route,
  });
}

function upstreamUrl(exchange: Exchange): string {
  const { pathname, search } = exchange.request;
  return `${exchange.settings.upstreams[exchange.dialect.provider]}${pathname}${search}`;
}

/**
 * When recovery appended to the conversation: what it appended (`recoveredTokens`), and the
 * prompt as last sent upstream (`tokensAfter`: the governed prompt plus that), in the log and in
 * `x-selfgc-tokens-after` while the answer's headers are not sent yet (buffered answers).
 */
function noteRecoveredTokens(exchange: Exchange, recovery: Recovery, viewTokens: number): void {
  const sent = recovery.sentTokens();
  if (sent === undefined) return;
  const { entry } = exchange.trace;
  const governed =
    entry.tokensAfter === undefined ? undefined : entry.tokensAfter - (entry.recoveredTokens ?? 0);
  entry.recoveredTokens = sent - viewTokens;
  if (governed === undefined) return;
  entry.tokensAfter = governed + entry.recoveredTokens;
  exchange.headers.set('x-selfgc-tokens-after', String(entry.tokensAfter));
}

/**
 * Whether an answer may be a refusal the dialect knows a remedy for (by its text): a 400, or a
 * 500 read whole (not an event stream), as llama.cpp refuses what it cannot take.
 */
function mayBeRefusal(call: UpstreamCall): boolean {
  const { status } = call.answer;
  return status === 400 || (status === 500 && eventStreamOf(call) === null);
}

/**
 * One upstream call; its time is counted once the answer is read (or the call failed). A body the
 * upstream refuses (a 400, or a 500 from servers that refuse a request as a failure of their own:
 * llama.cpp without `--jinja`) over what the dialect can remedy (`WireDialect.afterRefusal`) is
 * sent once more as the remedy has it; otherwise the refusal is the answer, as it came.
 */
async function send(
  exchange: Exchange,
  body: string | Uint8Array,
  signal: AbortSignal = exchange.request.signal,
): Promise<{ call: UpstreamCall; started: number; remedied?: JsonObject }> {
  const sent = await sendOnce(exchange, body, signal);
  if (!mayBeRefusal(sent.call) || exchange.dialect.afterRefusal === undefined) return sent;
  const { settings, trace, keyHash, forwarded } = exchange;
  const refusal = await sent.call.bytes().catch((cause: unknown) => {
    trace.addUpstreamTime(settings.now() - sent.started);
    throw cause;
  });
  const took = settings.now() - sent.started;
  const remedy = remedyFor(exchange, body, answerText.decode(refusal));
  // The refusal's time is counted once: by what reads the refusal again, when it is the answer
  // (as if it started that long before), and here when the body goes again.
  if (remedy === undefined) return { call: alreadyRead(sent.call, refusal), started: settings.now() - took };
  trace.addUpstreamTime(took);
  const model = String(remedy.body.model);
  if (remedy.addBeta !== undefined) {
    withBeta(forwarded, remedy.addBeta);
    settings.refusedBetas.forget(keyHash, { model, beta: remedy.addBeta });
  }
  if (remedy.dropBeta !== undefined) {
    withoutBeta(forwarded, remedy.dropBeta);
    settings.refusedBetas.note(keyHash, { model, beta: remedy.dropBeta });
  }
  exchange.refusedBetas = settings.refusedBetas.of(keyHash);
  addWarnings(exchange.headers, trace.entry, [SENT_AGAIN_AFTER_REFUSAL]);
  return { ...(await sendOnce(exchange, JSON.stringify(remedy.body), signal)), remedied: remedy.body };
}

/**
 * The dialect's remedy for a refused body, when the body can be read and the remedy takes out
 * only what the proxy put in: a beta the client sent itself stays, and so does its refusal; so
 * does a setting the client sent without the beta, which the proxy did not add.
 */
function remedyFor(exchange: Exchange, body: string | Uint8Array, error: string): RefusalRemedy | undefined {
  // Parsed only for a refusal the dialect can remedy: a refused body may be large.
  const read = (): JsonObject | undefined => {
    try {
      const parsed: unknown = JSON.parse(typeof body === 'string' ? body : decodeBodyText(body));
      return isJsonObject(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  };
  const remedy = exchange.dialect.afterRefusal?.(error, read);
  const dropped = remedy?.dropBeta;
  if (dropped === undefined) return remedy;
  const added = hasBeta(exchange.forwarded, dropped) && !hasBeta(exchange.request.headers, dropped);
  return added ? remedy : undefined;
}

/** An answer's text as `Response.text()` has it: UTF-8, invalid bytes replaced. */
const answerText = new TextDecoder();

/**
 * A call whose whole answer was read already (its `bytes`): read again, it gives the same bytes,
 * passed on as they came.
 */
function alreadyRead(call: UpstreamCall, bytes: Uint8Array): UpstreamCall {
  const { status, ok, headers } = call.answer;
  const text = async () => answerText.decode(bytes);
  const answer = { status, ok, headers, body: null, text, bytes: async () => bytes };
  return { answer, settle() {}, text, bytes: answer.bytes };
}

async function sendOnce(
  exchange: Exchange,
  body: string | Uint8Array,
  signal: AbortSignal,
): Promise<{ call: UpstreamCall; started: number }> {
  const { settings, trace } = exchange;
  const headers = new Headers(exchange.forwarded);
  headers.set('content-type', 'application/json');
  const started = settings.now();
  try {
    const call = await callUpstream({
      transport: settings.upstream,
      url: upstreamUrl(exchange),
      method: 'POST',
      headers,
      body,
      timeoutMs: settings.upstreamTimeoutMs,
      signal,
    });
    return { call, started };
  } catch (error) {
    trace.addUpstreamTime(settings.now() - started);
    throw error;
  }
}

/**
 * A recovery round's body, as it goes upstream: the proxy made it, so it goes with what a change
 * takes (`WireDialect.afterChange`), its beta added to this request's headers for this round and
 * the next. The first body may have needed nothing (no thinking in it yet) while a round's does:
 * the model thinks in a round, and a later round may change what that thinking followed (an
 * earlier result giving way to a later one's room).
 */
function roundBody(exchange: Exchange, body: JsonObject): string {
  // Not what the upstream refused for the model in this request or before in its namespace (`send`).
  const changed = unlessRefused(exchange.dialect.afterChange?.(body), exchange.refusedBetas, body);
  if (changed !== undefined) withBeta(exchange.forwarded, changed.beta);
  return JSON.stringify(changed?.body ?? body);
}

async function sendBuffered(exchange: Exchange, body: string | Uint8Array): Promise<BufferedAnswer> {
  return readAnswer(exchange, await send(exchange, body));
}

/** Read a whole answer within the timeout, and its usage when it succeeded. */
async function readAnswer(
  exchange: Exchange,
  { call, started }: { call: UpstreamCall; started: number },
): Promise<BufferedAnswer> {
  const text = await call.text().finally(() => {
    exchange.trace.addUpstreamTime(exchange.settings.now() - started);
  });
  let json: unknown;
  try {
    // An answer too deep to walk is passed on as text, unread.
    json = exceedsJsonDepth(text) ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (call.answer.ok) exchange.trace.addUsage(exchange.dialect.usageOf(json));
  return { status: call.answer.status, headers: call.answer.headers, text, json };
}

/** The answer's headers: the upstream's and the `x-selfgc-*` ones (`client-compaction` when it succeeded). */
function answerHeaders(exchange: Exchange, status: number, upstream: Headers): Headers {
  noteClientCompaction(exchange, status);
  const headers = clientResponseHeaders(upstream);
  for (const [name, value] of exchange.headers) headers.set(name, value);
  return headers;
}

/** Statuses whose responses cannot carry a body. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** A whole answer as the client gets it. */
type WholeAnswer<Body> = Pick<BufferedAnswer, 'status' | 'headers'> & { body: Body };

function answerBuffered(exchange: Exchange, answer: WholeAnswer<string | Uint8Array>): ProxyAnswer {
  // Before the log entry is written: it holds the answer's warnings.
  const headers = answerHeaders(exchange, answer.status, answer.headers);
  exchange.trace.respond(answer.status);
  exchange.trace.end();
  return {
    status: answer.status,
    headers,
    body: NULL_BODY_STATUSES.has(answer.status) ? null : answer.body,
  };
}

/**
 * Read a whole answer that goes to the client as it came: its bytes are passed on, and only its
 * `usage` field is parsed (an answer may echo the request's instructions and tools).
 */
async function readPassedOn(
  exchange: Exchange,
  { call, started }: { call: UpstreamCall; started: number },
): Promise<WholeAnswer<Uint8Array>> {
  const body = await call.bytes().finally(() => {
    exchange.trace.addUpstreamTime(exchange.settings.now() - started);
  });
  if (call.answer.ok) exchange.trace.addUsage(exchange.dialect.usageOf(usageHolderOf(body)));
  return { status: call.answer.status, headers: call.answer.headers, body };
}

/** The body of an answer that is an event stream, or null. */
function eventStreamOf(call: UpstreamCall): ReadableStream<Uint8Array> | null {
  const isStream = (call.answer.headers.get('content-type') ?? '').includes('text/event-stream');
  return isStream ? call.answer.body : null;
}

/** A streamed answer with transparent recovery: the rounds merged into one client stream. */
function answerStreamed(
  exchange: Exchange,
  sent: { call: UpstreamCall; started: number },
  parts: { recovery: Recovery; merger: StreamMerger; viewTokens: number },
): ProxyAnswer {
  const { dialect, settings, trace, request } = exchange;
  const { answer } = sent.call;
  sent.call.settle();
  trace.addUpstreamTime(settings.now() - sent.started);
  const stream = streamRecovery({
    dialect,
    recovery: parts.recovery,
    merger: parts.merger,
    first: eventStreamOf(sent.call)!,
    async send(body, signal) {
      const next = await send(exchange, roundBody(exchange, body), AbortSignal.any([request.signal, signal]));
      const stream = next.call.answer.ok ? eventStreamOf(next.call) : null;
      if (stream === null) {
        const { status, json } = await readAnswer(exchange, next);
        return { status, json };
      }
      next.call.settle();
      trace.addUpstreamTime(settings.now() - next.started);
      return { stream };
    },
    onUsage: (usage) => trace.addUsage(usage),
    onFailure: (error) => publicError(dialect.provider, trace.record(error), trace.requestId),
    onEnd(outcome) {
      noteRecoveredTokens(exchange, parts.recovery, parts.viewTokens);
      trace.end(outcome === 'complete' ? undefined : outcome);
    },
  });
  trace.respond(answer.status);
  return {
    status: answer.status,
    headers: answerHeaders(exchange, answer.status, answer.headers),
    body: stream,
  };
}

/** Forward once; event streams go through chunk by chunk, everything else is read first. */
async function forward(exchange: Exchange, body: Uint8Array): Promise<ProxyAnswer> {
  const sent = await send(exchange, body);
  const { answer } = sent.call;
  const source = eventStreamOf(sent.call);
  if (source === null) return answerBuffered(exchange, await readPassedOn(exchange, sent));
  sent.call.settle();
  const { dialect, settings, trace } = exchange;
  trace.addUpstreamTime(settings.now() - sent.started);
  const usage: Partial<TokenUsage> = {};
  const stream = tapEventStream(
    source,
    (data) => {
      // Only events that carry usage are parsed; the rest go by untouched and unread.
      Object.assign(usage, eventUsage(dialect, data));
    },
    (outcome) => {
      if (answer.ok) trace.addUsage(usage);
      trace.end(outcome === 'complete' ? undefined : outcome);
    },
  );
  trace.respond(answer.status);
  return {
    status: answer.status,
    headers: answerHeaders(exchange, answer.status, answer.headers),
    body: stream,
  };
}
