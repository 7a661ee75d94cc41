/**
 * Conversations whose answer goes through transparent recovery, for tests: the client's body
 * (the test conversation with its own `read_file` tool, as an agent sends it), the scripted
 * model's first round calling the proxy's `expand` on a pointer of its view, and a raw reading of
 * the client's stream that says how it ended.
 */
import { parseSse } from '../../testing/read-sse.js';
import type { ScriptedReply, ScriptedRequest } from '../../testing/scripted-reply.js';
import type { Wire } from '../../testing/upstream-test-kit.js';
import { EXPAND_TOOL } from '../transparent-recovery.js';
import { authHeaders, conversationBody, ROUTE_PATHS, type WireRoute } from './agent-conversation.js';
import { pointerKeys } from './recovery-pointers.js';

export const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];

/** Requests after the first of a recovery carry the scripted model's own call ids in their history. */
export function isRecoveryRound(request: ScriptedRequest): boolean {
  return request.rawBody.includes('_scripted0');
}

/** The scripted model's call of the proxy's `expand` on the first pointer the request shows. */
export function expandOf(request: ScriptedRequest): NonNullable<ScriptedReply['toolCalls']> {
  const [key] = pointerKeys(request.rawBody);
  if (key === undefined) throw new Error('no recovery pointer in the request');
  return [{ name: EXPAND_TOOL, arguments: { id: key } }];
}

const READ_FILE_SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string' } },
  required: ['path'],
};

/** The test conversation with the client's own `read_file` tool declared, as an agent sends it. */
export function agentBody(route: WireRoute, turns = 8): Wire {
  const body = conversationBody(route, { turns });
  const tool =
    route === 'chat'
      ? { type: 'function', function: { name: 'read_file', parameters: READ_FILE_SCHEMA } }
      : route === 'responses'
        ? { type: 'function', name: 'read_file', parameters: READ_FILE_SCHEMA, strict: false }
        : { name: 'read_file', input_schema: READ_FILE_SCHEMA };
  return { ...body, tools: [tool] };
}

export interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** How the body ended: cleanly, with the connection broken, or still open at the limit. */
  ending: 'end' | 'error' | 'timeout';
  ms: number;
}

/** POST a body to a route and read the answer within `limitMs` (default 5 s), whatever it is. */
export async function postRaw(
  url: string,
  route: WireRoute,
  body: Wire,
  options: { limitMs?: number; headers?: Record<string, string> } = {},
): Promise<RawAnswer> {
  const started = Date.now();
  const limit = new AbortController();
  const timer = setTimeout(() => limit.abort(), options.limitMs ?? 5000);
  try {
    const response = await fetch(`${url}${ROUTE_PATHS[route]}`, {
      method: 'POST',
      headers: { ...authHeaders(route, 'sk-test-key'), ...options.headers },
      body: JSON.stringify(body),
      signal: limit.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let ending: RawAnswer['ending'] = 'end';
    for (;;) {
      try {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      } catch {
        ending = limit.signal.aborted ? 'timeout' : 'error';
        break;
      }
    }
    return { status: response.status, headers: response.headers, text, ending, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** The events of a stream's text, each with its data parsed where it is JSON (not `[DONE]`). */
// biome-ignore lint/suspicious/noExplicitAny: tests read the events' fields freely
export function streamEvents(text: string): Array<{ event: string | undefined; data: any }> {
  return parseSse(text).map(({ event, data }) => {
    try {
      return { event, data: JSON.parse(data) };
    } catch {
      return { event, data };
    }
  });
}

/** The answer's text a client accumulates from a stream's deltas. */
export function streamedText(route: WireRoute, text: string): string {
  return streamEvents(text)
    .map(({ data }) => {
      if (typeof data !== 'object' || data === null) return '';
      if (route === 'messages') return data.type === 'content_block_delta' ? (data.delta?.text ?? '') : '';
      if (route === 'responses') return data.type === 'response.output_text.delta' ? data.delta : '';
      return data.choices?.[0]?.delta?.content ?? '';
    })
    .join('');
}
