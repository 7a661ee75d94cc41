/**
 * Who a governed request belongs to. The session id is, in this order: the explicit
 * `x-selfgc-session` header; the id the client already sends for its conversation
 * (`client-session-id.ts`: Claude Code, Codex, opencode, `prompt_cache_key`) with a hash of the
 * conversation's start; a hash of the start of the conversation and, once there is one, of its
 * first reply. A Claude Code subagent's agent id joins the first two. Sessions are namespaced by a
 * hash of the API key, so a key that guesses (or is sent) another key's session id reaches a
 * different store session and sees nothing. The API key itself is only ever hashed here; it is
 * never stored or logged.
 */
import { createHash } from 'node:crypto';
import { BadInputError } from '../core/errors.js';
import { type Message, messageText } from '../core/transcript.js';
import { agentSuffixOf, endUserOf, findClientSessionId } from './client-session-id.js';
import type { JsonObject } from './wire-dialect.js';

/** The header a client may set to name its session explicitly. */
export const SESSION_HEADER = 'x-selfgc-session';

const SESSION_ID_PATTERN = /^[\x21-\x7e]{1,200}$/;
/** Hex digits of the conversation's start that join a client's own session id. */
const CONVERSATION_HEX = 16;

export interface SessionIdentity {
  /** Hash of the API key (of the empty string when the request has none). */
  keyHash: string;
  /**
   * The header's value, the client's own id with the hash of the conversation's start
   * (`cc:<uuid>#<hash>`, `codex:…`), or `auto-<hash>`; `/agent:<id>` before any hash for a
   * Claude Code subagent.
   */
  sessionId: string;
  /** Where the id came from: `explicit`, a client source (`cc`, `codex`, `opencode`, `pck`), or `auto`. */
  source: string;
  /** What the store sees: `${keyHash}:${sessionId}`. */
  storeSessionId: string;
}

function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** The API key a request carries: `authorization: Bearer …`, `x-api-key` or `api-key`. */
export function apiKeyOf(headers: Headers): string {
  const authorization = headers.get('authorization');
  if (authorization !== null) return authorization.replace(/^Bearer\s+/i, '');
  return headers.get('x-api-key') ?? headers.get('api-key') ?? '';
}

/** A short, stable hash of the request's API key (never the key itself). */
export function hashApiKey(headers: Headers): string {
  return sha256(`selfgc-key\0${apiKeyOf(headers)}`).slice(0, 32);
}

/** How the proxy tells clients apart when they send no API key (local model servers). */
export interface KeylessTenancy {
  /** A request header naming the client (`--tenant-header`), e.g. `x-selfgc-tenant`. */
  header?: string;
  /** The client's network address (`--tenant-from-address`), where each client has its own. */
  fromAddress?: boolean;
}

/** A request's namespace: the `keyHash` its store sessions are prefixed with. */
export interface RequestNamespace {
  keyHash: string;
  /**
   * True when nothing tells this client apart from others (no key, no configured tenant): every
   * such request shares one namespace, so the proxy must not read sidecars for it.
   */
  shared: boolean;
}

/**
 * The namespace of a request: the API key's hash, as `hashApiKey`, unless tenancy is configured
 * and the request names a tenant (header or address), which then joins the key in the hash, so
 * that clients sharing a placeholder key are kept apart too.
 */
export function namespaceOf(
  headers: Headers,
  tenancy: KeylessTenancy | undefined,
  remoteAddress: string | undefined,
): RequestNamespace {
  const key = apiKeyOf(headers);
  const tenant = tenancy?.header === undefined ? '' : (headers.get(tenancy.header) ?? '');
  const address = tenancy?.fromAddress === true ? (remoteAddress ?? '') : '';
  if (tenant === '' && address === '') return { keyHash: hashApiKey(headers), shared: key === '' };
  const keyHash = sha256(`selfgc-tenant\0${key}\0${tenant}\0${address}`).slice(0, 32);
  return { keyHash, shared: false };
}

/**
 * The stable start of a conversation: every system message before the first user message, and
 * that user message. Later turns never change it, so every turn of one conversation maps to the
 * same session.
 */
export function conversationStart(messages: readonly Message[]): string {
  const start: string[] = [];
  for (const message of messages) {
    start.push(`${message.role}\0${messageText(message)}`);
    if (message.role === 'user') break;
  }
  return start.join('\0');
}

/**
 * The first reply of a conversation: the first assistant message after its start, as the model
 * wrote it (its text and its calls, call ids included; not its reasoning, which clients may drop
 * from later requests). Empty while the conversation has none. Two runs of one prompt part here:
 * a model's call ids alone differ from run to run.
 */
export function firstReply(messages: readonly Message[]): string {
  let started = false;
  for (const message of messages) {
    if (message.role === 'user') started = true;
    if (!started || message.role !== 'assistant') continue;
    // Blank text is left out: clients send an empty reply as `null`, `""` or no block at all.
    return message.parts
      .flatMap((part) => {
        if (part.type === 'text') return part.text.trim() === '' ? [] : [part.text.trim()];
        return part.type === 'tool-call' ? [`${part.id}\0${part.name}\0${part.arguments}`] : [];
      })
      .join('\0');
  }
  return '';
}

export interface IdentityInput {
  headers: Headers;
  /** The parsed request body (client session fields are read from it). */
  body: JsonObject;
  messages: readonly Message[];
  /** Request text outside the transcript that also identifies a conversation (Responses `instructions`). */
  seed?: string;
  /** `hashApiKey(headers)`, when the caller has it already. */
  keyHash?: string;
}

/**
 * The identity of a governed request. Only a malformed explicit header is refused; a malformed
 * client id falls through to the next source.
 */
export function deriveSessionIdentity(input: IdentityInput): SessionIdentity {
  const { headers, body, messages, seed = '' } = input;
  const keyHash = input.keyHash ?? hashApiKey(headers);
  const identity = (sessionId: string, source: string): SessionIdentity => ({
    keyHash,
    sessionId,
    source,
    storeSessionId: `${keyHash}:${sessionId}`,
  });
  const explicit = headers.get(SESSION_HEADER);
  if (explicit !== null) {
    // Claude Code passes the header on to its subagents: each gets a session of its own. A
    // subagent's id as the proxy answered it, sent back, names the same session, not a deeper one.
    const agent = agentSuffixOf(headers);
    const echoed = agent !== '' && explicit.length > agent.length && explicit.endsWith(agent);
    const name = echoed ? explicit.slice(0, -agent.length) : explicit;
    if (!SESSION_ID_PATTERN.test(name)) {
      throw new BadInputError(`${SESSION_HEADER} must be 1 to 200 visible ASCII characters`);
    }
    return identity(`${name}${agent}`, 'explicit');
  }
  const client = findClientSessionId(headers, body);
  if (client !== undefined) {
    // A client's side requests and subagents may send its id: each conversation of the id is a
    // session of its own, told apart by its start, so that none drops the state of another.
    const conversation = sha256(conversationStart(messages)).slice(0, CONVERSATION_HEX);
    return identity(`${client.sessionId}#${conversation}`, client.source);
  }
  // Runs of one prompt at once (an eval's repeated trials) share their start: from the first
  // reply on, it joins the hash, so that each run keeps its own state instead of dropping the
  // other's at every call. Before it (and without an end user), the hash is the one earlier
  // versions derived.
  const endUser = endUserOf(body);
  const start = `${endUser === '' ? '' : `${endUser}\0`}${conversationStart(messages)}`;
  const reply = firstReply(messages);
  const hash = sha256(`${keyHash}\0${seed}\0${start}${reply === '' ? '' : `\0reply\0${reply}`}`).slice(0, 32);
  return identity(`auto-${hash}`, 'auto');
}

/** A hash of the store session id, safe for logs. */
export function sessionLogId(identity: SessionIdentity): string {
  return sha256(identity.storeSessionId).slice(0, 16);
}
