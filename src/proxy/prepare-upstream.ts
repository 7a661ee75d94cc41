/**
 * The governance step of a governed request, from the client's body bytes to the bytes the
 * upstream gets: decode, parse and check them, find the session, govern it. It needs no socket,
 * so it runs on the proxy's own thread or in a governance worker (`governance-workers.ts`)
 * alike; either way it returns only what the rest of the request needs, as bytes, so no text, no
 * parsed tree and no transcript of the request stays on a JavaScript heap through the upstream
 * wait (a second or more, with hundreds of requests in flight: kept, they would survive
 * young-generation collections and be copied again and again). A body governance leaves as it
 * is goes upstream as the client's own bytes.
 */
import { BadInputError, parseJson } from '../core/errors.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../core/json-depth.js';
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
  /** The request's namespace (`namespaceOf`): the API key's hash, or the tenant's. */
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

/** Tool arguments are JSON inside a string, which the body's own depth check cannot see into. */
function checkArgumentDepth(transcript: readonly Message[]): void {
  transcript.forEach((message, messageIndex) => {
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

export async function prepareUpstream(input: PrepareInput): Promise<PreparedRequest> {
  const { settings, dialect, trace, headers } = input;
  const body = parseJson(decodeBodyText(input.bytes), 'request body');
  if (!isJsonObject(body)) throw new BadInputError('request body: expected a JSON object');
  const model = requireModel(body);
  const transcript = dialect.readTranscript(body);
  checkArgumentDepth(transcript);
  const seed = dialect.identitySeed?.(body);
  const identity = deriveSessionIdentity(input.requestHeaders, transcript, seed, input.keyHash);
  headers.set(SESSION_HEADER, identity.sessionId);
  trace.entry.session = sessionLogId(identity);
  trace.entry.stream = body.stream === true;
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
