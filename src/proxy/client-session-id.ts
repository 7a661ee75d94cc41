/**
 * The session id a client already sends, read from the headers and body fields that agents set
 * for their own conversation. Sources are tried in order; each one's id is namespaced
 * (`cc:<uuid>`, `codex:<id>`, …) so two sources never name the same session, and checked: a
 * malformed value is skipped for the next source rather than refused.
 */
import { isJsonObject, type JsonObject } from './wire-dialect.js';

/** A client id found in a request: its namespaced form and the source that gave it. */
export interface ClientSessionId {
  /** `${namespace}:${id}`, and `/agent:<id>` for a Claude Code subagent (`agentSuffixOf`). */
  sessionId: string;
  /** The namespace, for logs (`cc`, `codex`, `opencode`, `pck`). */
  source: string;
}

interface SessionSource {
  namespace: string;
  /** A request header to read, lower case. */
  header?: string;
  /** Or a body field to read. */
  read?: (body: JsonObject) => string | undefined;
}

/** UUIDs, `ses_…`, hex hashes and the like; anything else is not taken as a session id. */
const CLIENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,127}$/;

/**
 * The session part of Claude Code's `metadata.user_id`: the legacy
 * `user_<hash>_account_<uuid>_session_<uuid>`, or the JSON string newer versions send,
 * `{"device_id":…,"account_uuid":…,"session_id":…}` (both shapes as quoted in coder/aibridge#241).
 */
export function claudeCodeSessionOf(body: JsonObject): string | undefined {
  const userId = isJsonObject(body.metadata) ? body.metadata.user_id : undefined;
  if (typeof userId !== 'string') return undefined;
  if (userId.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(userId);
      return isJsonObject(parsed) && typeof parsed.session_id === 'string' ? parsed.session_id : undefined;
    } catch {
      return undefined;
    }
  }
  const marker = userId.lastIndexOf('_session_');
  return marker < 0 ? undefined : userId.slice(marker + '_session_'.length);
}

function promptCacheKeyOf(body: JsonObject): string | undefined {
  return typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : undefined;
}

const SOURCES: readonly SessionSource[] = [
  // Claude Code ≥ 2.1.86 sends one UUID per session on every request (its gateway protocol docs;
  // coder/aibridge#241); older versions only put it in `metadata.user_id`.
  { namespace: 'cc', header: 'x-claude-code-session-id' },
  { namespace: 'cc', read: claudeCodeSessionOf },
  // Codex: `thread-id` names the conversation, `session-id` the thread group it belongs to (they
  // differ for forked threads); codex-rs `build_session_headers`, hyphenated since openai/codex
  // #21757 / #22193, underscored before, and `conversation_id` + `session_id` earlier still.
  { namespace: 'codex', header: 'thread-id' },
  { namespace: 'codex', header: 'thread_id' },
  { namespace: 'codex', header: 'session-id' },
  { namespace: 'codex', header: 'session_id' },
  { namespace: 'codex', header: 'conversation_id' },
  // opencode (packages/opencode/src/session/llm/request.ts): `x-opencode-session` to its own
  // providers, `x-session-affinity` (and `X-Session-Id`) to every other, all its session id.
  { namespace: 'opencode', header: 'x-opencode-session' },
  { namespace: 'opencode', header: 'x-session-affinity' },
  // OpenAI Chat and Responses. Codex sends its conversation id here, opencode its session id
  // (`promptCacheKey` provider option); other clients may share one key across conversations,
  // hence its place after every client's own id.
  { namespace: 'pck', read: promptCacheKeyOf },
];

/** The headers that name a session, in the order they are tried. */
const SESSION_HEADERS: readonly string[] = SOURCES.flatMap((source) =>
  source.header === undefined ? [] : [source.header],
);

/**
 * Claude Code's subagents send their parent's session id, and this header with an id of their
 * own (≥ 2.1.258). The parent sends none, unless its query was sent to the background: it then
 * carries an agent id too, and its conversation goes on in a new session, governed afresh.
 */
const AGENT_HEADER = 'x-claude-code-agent-id';

/** The request headers the sources read (a governance worker gets these and no others). */
export const CLIENT_SESSION_HEADERS: readonly string[] = [...SESSION_HEADERS, AGENT_HEADER];

/** What a subagent's request adds to its session id (`/agent:<id>`); '' for any other. */
export function agentSuffixOf(headers: Headers): string {
  const agent = headers.get(AGENT_HEADER)?.trim();
  return agent !== undefined && CLIENT_ID_PATTERN.test(agent) ? `/agent:${agent}` : '';
}

/** The first well-formed client session id of a request, or undefined when it sends none. */
export function findClientSessionId(headers: Headers, body: JsonObject): ClientSessionId | undefined {
  for (const source of SOURCES) {
    const value = source.header === undefined ? source.read?.(body) : headers.get(source.header);
    const id = value?.trim();
    if (id !== undefined && CLIENT_ID_PATTERN.test(id)) {
      return { sessionId: `${source.namespace}:${id}${agentSuffixOf(headers)}`, source: source.namespace };
    }
  }
  return undefined;
}

/** The first client session header value, for routing a request to a worker before parsing it. */
export function clientSessionHint(headers: Headers): string {
  for (const name of SESSION_HEADERS) {
    const value = headers.get(name);
    if (value !== null) return value;
  }
  return '';
}

/**
 * An end-user id the request carries (OpenAI `user` or `safety_identifier`, Anthropic
 * `metadata.user_id`): one user holds many conversations, so it only tells apart conversations that
 * would otherwise hash alike.
 */
export function endUserOf(body: JsonObject): string {
  for (const field of ['user', 'safety_identifier'] as const) {
    const value = body[field];
    if (typeof value === 'string') return value;
  }
  const userId = isJsonObject(body.metadata) ? body.metadata.user_id : undefined;
  return typeof userId === 'string' ? userId : '';
}
