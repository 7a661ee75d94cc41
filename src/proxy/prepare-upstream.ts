/**
 * The governance step of a governed request, from the client's body bytes to the bytes the
 * upstream gets: decode, parse and check them, find the session, govern it. It needs no socket,
 * so it runs on the proxy's own thread or in a governance worker (`governance-workers.ts`)
 * alike; either way it returns only what the rest of the request needs, as bytes, so nothing of
 * the request stays on a JavaScript heap through the upstream wait (a second or more, with
 * hundreds of requests in flight: kept, it would survive young-generation collections and be
 * copied again and again) but what the thread's transcript cache keeps on purpose: the latest
 * body of each conversation, parsed and read, within its bounds, so that the next request of the
 * conversation parses, reads, hashes and writes back only what it adds. A body governance leaves
 * as it is goes upstream as the client's own bytes.
 *
 * Only a body the provider itself would refuse is refused here (not JSON, no `model`, no
 * `messages` array): one whose conversation the adapters cannot read (a block or item of a shape
 * they do not know, or a malformed one) goes upstream ungoverned, as the client's own bytes,
 * flagged `x-selfgc-governance: passthrough` with the reason in `x-selfgc-passthrough`, counted
 * in `selfgc_proxy_passthrough_total{reason}` and logged; the upstream has the last word on it.
 */
import { BadInputError, parseJson } from '../core/errors.js';
import type { RecoveryScope } from '../core/governor/governor-types.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../core/json-depth.js';
import type { Message } from '../core/transcript.js';
import { AGENT_TOOLS } from './agent-tools.js';
import { CLIENT_SESSION_HEADERS } from './client-session-id.js';
import { LONG_CONTEXT_HEADER } from './context-window.js';
import { type GovernSettings, governRequest } from './govern-request.js';
import { decodeBodyText, encodeBodyText } from './read-body-bytes.js';
import type { RecoveryWindow } from './recovery-budget.js';
import { type RefusedBeta, unlessRefused } from './refused-betas.js';
import type { RequestTrace } from './request-trace.js';
import { deriveSessionIdentity, SESSION_HEADER, sessionLogId } from './session-identity.js';
import type { LaneReason } from './stateless-lane.js';
import type { BodyReading, BoundTranscript, TranscriptCache } from './transcript-cache.js';
import { hasRecoveryPointers, RECOVERY_TOOLS, type RecoveryGovernor } from './transparent-recovery.js';
import { isJsonObject, type JsonObject, type WireDialect } from './wire-dialect.js';

/**
 * Recovery for one view: the same session id may hold other content (an edited history,
 * another conversation), and the proxy answers only from what this view's pointers name.
 */
export function scopeRecovery(governor: RecoveryGovernor, scope: RecoveryScope): RecoveryGovernor {
  return {
    expand: (sessionId, key) => governor.expand(sessionId, key, scope),
    searchContext: (sessionId, query, limit) => governor.searchContext(sessionId, query, limit, scope),
  };
}

/** The request headers governance reads (and a governance worker receives): never the key. */
export const GOVERNANCE_HEADERS: readonly string[] = [
  SESSION_HEADER,
  ...CLIENT_SESSION_HEADERS,
  LONG_CONTEXT_HEADER,
];

export interface PrepareInput {
  /** `agentTools`: the agent-driven mode (`agent-tools.ts`), on the requests recovery serves. */
  settings: GovernSettings & { recovery: boolean; agentTools?: boolean | undefined };
  dialect: WireDialect;
  /** The client's body, whole. */
  bytes: Uint8Array;
  /** The client's request headers (session ids and the long-context beta are read from them). */
  requestHeaders: Headers;
  /** The request's namespace (`namespaceOf`): the API key's hash, or the tenant's. */
  keyHash: string;
  /** The request's arm and log entry (filled in here). */
  trace: Pick<RequestTrace, 'arm' | 'entry'>;
  /** The `x-selfgc-*` headers of the answer (filled in here). */
  headers: Headers;
  signal: AbortSignal;
  /** Through the stateless lane instead of governance, and why (the request is over budget). */
  lane?: LaneReason | undefined;
  /** This thread's transcript cache: a request that repeats an earlier one costs what it adds. */
  transcripts?: TranscriptCache;
  /** Betas the upstream refused before (`refused-betas.ts`): a change that takes one goes without. */
  refusedBetas?: readonly RefusedBeta[] | undefined;
}

export interface PreparedUpstream {
  /** The body to send upstream first: the client's own bytes when governance left it as it is. */
  body: Uint8Array;
  /**
   * The stored answer the body continues (`WireDialect.continuedAnswer`), read here, off the
   * proxy's thread: the proxy's thread parses the body again only when it is to name another.
   */
  continues?: string;
  /** A beta the changed body needs, to add to `anthropic-beta` (`WireDialect.afterChange`). */
  beta?: string;
  /** Set when transparent recovery runs: `body` then carries the recovery tools. */
  recovery?: {
    /** The store session id. */
    sessionId: string;
    /**
     * What of the client's request shapes the answer it gets: its `tool_choice`, given back when
     * the recovery tools are hidden, and its `store`, when it sent them.
     */
    client: JsonObject;
    /** What this view can recover (`ProjectResult.recoverable`): recovery answers for it alone. */
    scope: RecoveryScope;
    /** The room the view was governed for, and the view's tokens: the room recovery has. */
    window: RecoveryWindow;
    /** The agent's `selfgc_fold` and `selfgc_prune` are offered too, and answered. */
    agentTools?: true;
  };
}

/** What stays on the thread that prepared the request (functions, not sent between threads). */
export interface PreparedRequest extends PreparedUpstream {
  /** The governor that answers recovery from the sidecar. */
  governor?: RecoveryGovernor;
  /**
   * Counts the messages governance only bounded and prepares the next call
   * (`ProjectResult.settle` and `afterSend`), for the
   * conversation's next request: run it once `body` is on its way.
   */
  settle?: () => void;
}

/**
 * Tool arguments are JSON inside a string, which the body's own depth check cannot see into.
 * Messages before `from` were checked with an earlier request.
 */
function checkArgumentDepth(transcript: readonly Message[], from = 0): void {
  transcript.forEach((message, messageIndex) => {
    if (messageIndex < from) return;
    for (const part of message.parts) {
      if (part.type === 'tool-call' && exceedsJsonDepth(part.arguments)) {
        throw new BadInputError(
          `message ${messageIndex}: tool call arguments nested deeper than ${MAX_JSON_DEPTH} levels`,
          { messageIndex },
        );
      }
    }
  });
}

/** Why a governed route's body went upstream ungoverned: the adapters could not read it. */
export const UNREADABLE_SHAPE = 'unreadable-shape';

/** Why a body went upstream ungoverned: it names no model, whose window the proxy would need. */
const NO_MODEL = 'no-model';

/** Why a governed route's body went upstream ungoverned: the proxy does not read its coding. */
export const UNREADABLE_ENCODING = 'unreadable-encoding';

/** Flag, count and log a governed route's body that goes upstream ungoverned, and why. */
export function markPassThrough(
  {
    settings,
    trace,
    headers,
  }: Pick<PrepareInput, 'trace' | 'headers'> & { settings: Pick<GovernSettings, 'metrics'> },
  reason: string,
  unreadable: string,
): void {
  settings.metrics.count('selfgc_proxy_passthrough_total', { arm: trace.arm, reason });
  headers.set('x-selfgc-governance', 'passthrough');
  headers.set('x-selfgc-passthrough', reason);
  trace.entry.governance = 'passthrough';
  trace.entry.passthrough = reason;
  trace.entry.unreadable = unreadable;
}

/** The body parsed, through the transcript cache when there is one and it can read the bytes. */
function readBody(input: PrepareInput): { body: JsonObject; reading?: BodyReading } {
  const reading = input.transcripts?.read({
    dialect: input.dialect,
    namespace: input.keyHash,
    bytes: input.bytes,
  });
  if (reading !== undefined) return { body: reading.body, reading };
  const body = parseJson(decodeBodyText(input.bytes), 'request body');
  if (!isJsonObject(body)) throw new BadInputError('request body: expected a JSON object');
  return { body };
}

export async function prepareUpstream(input: PrepareInput): Promise<PreparedRequest> {
  const { settings, dialect, trace, headers } = input;
  const { body, reading } = readBody(input);
  dialect.checkBody(body);
  trace.entry.stream = body.stream === true;
  // A body that continues a stored answer is never governed: it goes as it came, or continues
  // another answer (`stored-responses.ts`), whether the adapters can read it or not.
  const continues = dialect.continuedAnswer?.(body);
  const asCame: PreparedUpstream =
    continues === undefined ? { body: input.bytes } : { body: input.bytes, continues };
  // A body the provider takes without a model (a Responses stored prompt names one) has no window
  // the proxy knows: it goes as it came, flagged and logged as such.
  if (typeof body.model !== 'string' || body.model === '') {
    headers.set('x-selfgc-governance', NO_MODEL);
    trace.entry.governance = NO_MODEL;
    return asCame;
  }
  const { model } = body;
  const read = readOrPassThrough(input, body, reading);
  if (read === undefined) return asCame;
  const { messages: transcript, bound } = read;
  checkArgumentDepth(transcript, bound?.reused);
  bound?.keep();
  const identity = deriveSessionIdentity({
    headers: input.requestHeaders,
    body,
    messages: transcript,
    seed: dialect.identitySeed?.(body) ?? '',
    keyHash: input.keyHash,
  });
  headers.set(SESSION_HEADER, identity.sessionId);
  trace.entry.session = sessionLogId(identity);
  trace.entry.sessionSource = identity.source;
  const recoveryRoute = settings.recovery && dialect.recoverable?.(body) !== false;
  // The agent governs itself only where the proxy answers its calls.
  const agentTools = recoveryRoute && settings.agentTools === true;
  const proxyTools = agentTools ? [...RECOVERY_TOOLS, ...AGENT_TOOLS] : recoveryRoute ? RECOVERY_TOOLS : [];
  const governed = await governRequest(settings, {
    dialect,
    body,
    model,
    transcript,
    read,
    identity,
    trace,
    requestHeaders: input.requestHeaders,
    headers,
    // Recovery tools go into requests whose view has pointers, streamed or not: keep room for them.
    proxyTools,
    recoveryRoute,
    agentTools,
    signal: input.signal,
    ...(input.lane === undefined ? {} : { lane: input.lane }),
    ...(bound === undefined ? {} : { chain: bound.chain }),
  });
  // A body governance changed goes with what the change takes (`WireDialect.afterChange`). So does
  // one the stateless lane leaves as it came: the conversation's earlier requests may have gone
  // governed (the store went down since, or governance ran out of time), and what the model
  // produced after them is bound to what they sent, not to what the client sends.
  const send = (out: JsonObject, wasGoverned = out !== body): PreparedUpstream => {
    const changed = wasGoverned
      ? unlessRefused(dialect.afterChange?.(out), input.refusedBetas ?? [], out)
      : undefined;
    if (out === body && changed === undefined) return { body: input.bytes };
    const sent = changed?.body ?? out;
    const bytes = reading === undefined ? encodeBodyText(JSON.stringify(sent)) : reading.render(sent);
    return { body: bytes, ...(changed === undefined ? {} : { beta: changed.beta }) };
  };
  if (governed.body === undefined) return governed.lane ? { ...asCame, ...send(body, true) } : asCame;
  const { result, governor } = governed;
  const settle = governed.settle === undefined ? {} : { settle: governed.settle };
  const recover =
    recoveryRoute &&
    governed.toolsWithheld === undefined &&
    result !== undefined &&
    (agentTools || hasRecoveryPointers(result.view));
  if (!recover || governor === undefined) return { ...send(governed.body), ...settle };
  // What of the request shapes the answer the client gets: the tool choice it echoes (the last
  // round sets it to none) and whether the provider keeps items (`store`). The rest of the body
  // stays here: an agent's instructions and schemas would be copied to the proxy's thread on
  // every request for nothing.
  const client: JsonObject = {
    ...('tool_choice' in body ? { tool_choice: body.tool_choice! } : {}),
    ...('store' in body ? { store: body.store! } : {}),
  };
  const scope = result.recoverable;
  // Recovery appends messages: it has the conversation's room, less what the view takes.
  const window = {
    windowTokens: governed.conversationRoom ?? result.viewTokens,
    viewTokens: result.viewTokens,
  };
  const scoped = scopeRecovery(governor, scope);
  return {
    ...send(dialect.withTools(governed.body, proxyTools)),
    recovery: {
      sessionId: identity.storeSessionId,
      client,
      scope,
      window,
      ...(agentTools ? { agentTools: true as const } : {}),
    },
    governor: agentTools
      ? {
          ...scoped,
          // Against the transcript of this request: what the agent saw when it asked.
          commitAgentPlan: (sessionId, plan) => governor.applyAgentPlan(sessionId, transcript, plan),
        }
      : scoped,
    ...settle,
  };
}

/**
 * The body's transcript, or undefined when the adapters cannot read it: then the request is
 * flagged, counted and logged as a pass-through (the log names where, never what: an adapter's
 * message holds indexes and field names, not content).
 */
function readOrPassThrough(
  input: PrepareInput,
  body: JsonObject,
  reading: BodyReading | undefined,
): { messages: Message[]; ends: number[]; bound?: BoundTranscript } | undefined {
  try {
    if (reading === undefined) return input.dialect.readElements(body);
    const bound = reading.transcript();
    return { messages: bound.messages, ends: bound.ends, bound };
  } catch (error) {
    if (!(error instanceof BadInputError)) throw error;
    markPassThrough(input, UNREADABLE_SHAPE, error.message.slice(0, UNREADABLE_DETAIL_CHARS));
    return undefined;
  }
}

/** Enough of an adapter's message to name the message index and field it could not read. */
const UNREADABLE_DETAIL_CHARS = 300;
