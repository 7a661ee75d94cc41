/**
 * The governance step of a governed request, from the client's body bytes to the bytes the
 * upstream gets: decode, parse and check them, find the session, govern it. It needs no socket,
 * so it runs on the proxy's own thread or in a governance worker (`governance-workers.ts`)
 * alike; either way it returns only what the rest of the request needs, as bytes, so no text, no
 * parsed tree and no transcript of the request stays on a JavaScript heap through the upstream
 * wait (a second or more, with hundreds of requests in flight: kept, they would survive
 * young-generation collections and be copied again and again). A body governance leaves as it
 * is goes upstream as the client's own bytes.
 *
 * Only a body the provider itself would refuse is refused here (not JSON, no `model`, no
 * `messages` array): one whose conversation the adapters cannot read (a block or item of a shape
 * they do not know, or a malformed one) goes upstream ungoverned, as the client's own bytes,
 * flagged `x-selfgc-governance: passthrough` with the reason in `x-selfgc-passthrough`, counted
 * in `selfgc_proxy_passthrough_total{reason}` and logged; the upstream has the last word on it.
 */
import { BadInputError, parseJson } from '../core/errors.js';
import type { Message } from '../core/transcript.js';
import { governRequest } from './govern-request.js';
import type { ProxySettings } from './proxy-options.js';
import { decodeBodyText, encodeBodyText } from './read-body-bytes.js';
import type { RequestTrace } from './request-trace.js';
import { deriveSessionIdentity, SESSION_HEADER, sessionLogId } from './session-identity.js';
import { hasRecoveryPointers, RECOVERY_TOOLS, type RecoveryGovernor } from './transparent-recovery.js';
import { isJsonObject, type JsonObject, requireModel, type WireDialect } from './wire-dialect.js';

export interface PrepareInput {
  settings: Pick<ProxySettings, 'failOpen' | 'recovery' | 'metrics' | 'now' | 'governorFor'>;
  dialect: WireDialect;
  /** The client's body, whole. */
  bytes: Uint8Array;
  /** The client's request headers (the session header is read from them). */
  requestHeaders: Headers;
  /** `hashApiKey(requestHeaders)`. */
  keyHash: string;
  /** The request's arm and log entry (filled in here). */
  trace: Pick<RequestTrace, 'arm' | 'entry'>;
  /** The `x-selfgc-*` headers of the answer (filled in here). */
  headers: Headers;
  signal: AbortSignal;
}

export interface PreparedUpstream {
  /** The body to send upstream first: the client's own bytes when governance left it as it is. */
  body: Uint8Array;
  /** Set when transparent recovery runs: `body` then carries the recovery tools. */
  recovery?: {
    /** The store session id. */
    sessionId: string;
    /** The client's body without its conversation, to hide the recovery tools from the answer. */
    client: JsonObject;
  };
}

/** What the proxy's thread keeps for recovery: the governor that answers from the sidecar. */
export interface PreparedRequest extends PreparedUpstream {
  governor?: RecoveryGovernor;
}

/** Why a governed route's body went upstream ungoverned: the adapters could not read it. */
export const UNREADABLE_SHAPE = 'unreadable-shape';

export async function prepareUpstream(input: PrepareInput): Promise<PreparedRequest> {
  const { settings, dialect, trace, headers } = input;
  const body = parseJson(decodeBodyText(input.bytes), 'request body');
  if (!isJsonObject(body)) throw new BadInputError('request body: expected a JSON object');
  const model = requireModel(body);
  dialect.checkBody(body);
  trace.entry.stream = body.stream === true;
  const transcript = readOrPassThrough(input, body);
  if (transcript === undefined) return { body: input.bytes };
  const seed = dialect.identitySeed?.(body);
  const identity = deriveSessionIdentity(input.requestHeaders, transcript, seed, input.keyHash);
  headers.set(SESSION_HEADER, identity.sessionId);
  trace.entry.session = sessionLogId(identity);
  const governed = await governRequest(settings, {
    dialect,
    body,
    model,
    transcript,
    identity,
    trace,
    headers,
    signal: input.signal,
  });
  if (governed.body === undefined) return { body: input.bytes };
  const view = governed.result?.view;
  const recover =
    settings.recovery && body.stream !== true && view !== undefined && hasRecoveryPointers(view);
  if (!recover || governed.governor === undefined) {
    return { body: encodeBodyText(JSON.stringify(governed.body)) };
  }
  // Every dialect keeps its conversation in `messages` or `input`; the rest is small.
  const { messages: _messages, input: _input, ...client } = body;
  return {
    body: encodeBodyText(JSON.stringify(dialect.withTools(governed.body, RECOVERY_TOOLS))),
    recovery: { sessionId: identity.storeSessionId, client },
    governor: governed.governor,
  };
}

/**
 * The body's transcript, or undefined when the adapters cannot read it: then the request is
 * flagged, counted and logged as a pass-through (the log names where, never what: an adapter's
 * message holds indexes and field names, not content).
 */
function readOrPassThrough(input: PrepareInput, body: JsonObject): Message[] | undefined {
  try {
    return input.dialect.readTranscript(body);
  } catch (error) {
    if (!(error instanceof BadInputError)) throw error;
    const { settings, trace, headers } = input;
    settings.metrics.count('selfgc_proxy_passthrough_total', { arm: trace.arm, reason: UNREADABLE_SHAPE });
    headers.set('x-selfgc-governance', 'passthrough');
    headers.set('x-selfgc-passthrough', UNREADABLE_SHAPE);
    trace.entry.governance = 'passthrough';
    trace.entry.passthrough = UNREADABLE_SHAPE;
    trace.entry.unreadable = error.message.slice(0, UNREADABLE_DETAIL_CHARS);
    return undefined;
  }
}

/** Enough of an adapter's message to name the message index and field it could not read. */
const UNREADABLE_DETAIL_CHARS = 300;
