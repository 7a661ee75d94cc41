/**
 * The client side of the proxy load script: concurrent agent sessions, each sending its growing
 * conversation turn by turn, once straight to the upstream and once through the proxy, so both
 * latencies come from the same moment of the same run.
 */
import {
  authHeaders,
  conversationBody,
  ROUTE_PATHS,
  type WireRoute,
} from '../src/proxy/testing/agent-conversation.js';

export interface LoadSession {
  index: number;
  route: WireRoute;
  apiKey: string;
  /** Explicit session id (shared by sessions of different keys on purpose), or derived. */
  sessionHeader: string | undefined;
  /** Written into this session's file contents, to recognise its sidecar payloads. */
  marker: string;
}

export interface TurnResult {
  session: LoadSession;
  turn: number;
  directMs: number;
  proxyMs: number;
  /** The proxied answer was a complete, correct 200. */
  ok: boolean;
  problem?: string;
  /** The `x-selfgc-session` the proxy answered with. */
  sessionId: string | null;
  commit: string | null;
}

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];

export function planSessions(count: number, keys: number): LoadSession[] {
  return Array.from({ length: count }, (_, index) => ({
    index,
    route: ROUTES[index % ROUTES.length]!,
    apiKey: `sk-load-${index % keys}`,
    // Every other session names itself; names repeat across keys so isolation is exercised.
    sessionHeader: index % 2 === 0 ? `load-${Math.floor(index / keys)}` : undefined,
    marker: `session-${index}`,
  }));
}

async function timed(
  url: string,
  init: RequestInit,
): Promise<{ ms: number; response: Response; text: string }> {
  const started = performance.now();
  const response = await fetch(url, init);
  const text = await response.text();
  return { ms: performance.now() - started, response, text };
}

/** What a correct scripted answer to this session's turn contains. */
export function expectedReply(session: LoadSession, turn: number): string {
  return `ack ${session.marker} turn ${turn}`;
}

export async function runSession(
  session: LoadSession,
  options: { turns: number; upstreamUrl: string; proxyUrl: string; deadline: number },
): Promise<TurnResult[]> {
  const results: TurnResult[] = [];
  for (let turn = 1; turn <= options.turns; turn += 1) {
    if (performance.now() > options.deadline) break;
    const body = JSON.stringify(
      conversationBody(session.route, {
        turns: turn,
        task: `Task of ${session.marker}`,
        marker: session.marker,
      }),
    );
    const headers = {
      ...authHeaders(session.route, session.apiKey),
      ...(session.sessionHeader === undefined ? {} : { 'x-selfgc-session': session.sessionHeader }),
      'x-bench-turn': `${session.marker}/${turn}`,
    };
    const path = ROUTE_PATHS[session.route];
    const direct = await timed(`${options.upstreamUrl}${path}`, { method: 'POST', headers, body });
    const proxied = await timed(`${options.proxyUrl}${path}`, {
      method: 'POST',
      headers: { ...headers, 'x-bench-via': 'proxy' },
      body,
    });
    const expected = expectedReply(session, turn);
    const ok =
      proxied.response.status === 200 && proxied.text.includes(expected) && direct.response.status === 200;
    results.push({
      session,
      turn,
      directMs: direct.ms,
      proxyMs: proxied.ms,
      ok,
      ...(ok ? {} : { problem: `status ${proxied.response.status}: ${proxied.text.slice(0, 200)}` }),
      sessionId: proxied.response.headers.get('x-selfgc-session'),
      commit: proxied.response.headers.get('x-selfgc-commit'),
    });
  }
  return results;
}
