/**
 * The proxy as a fetch-style handler (`Request → Response`, web standard types): the governed
 * routes, everything else passed through, `/healthz` and `/metrics`. `serveProxy` binds it to
 * node:http through `answer`, the same handler without the web types; tests call `handle`
 * in-process.
 */
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { handleGoverned } from './handle-governed.js';
import { handlePassThrough, isWebSocketUpgrade, refuseWebSocket } from './handle-pass-through.js';
import {
  answerToWeb,
  jsonAnswer,
  type ProxyAnswer,
  type ProxyRequest,
  requestFromWeb,
} from './proxy-exchange.js';
import { type ProxyOptions, type ProxySettings, resolveProxySettings } from './proxy-options.js';
import { responsesDialect } from './responses-dialect.js';
import type { WireDialect } from './wire-dialect.js';

export interface SelfGcProxy {
  handle(request: Request): Promise<Response>;
  /** `handle` without web types, for a server that reads requests and writes answers itself. */
  answer?(request: ProxyRequest): Promise<ProxyAnswer>;
}

const GOVERNED_ROUTES: Readonly<Record<string, WireDialect>> = {
  'POST /v1/chat/completions': chatDialect,
  'POST /v1/responses': responsesDialect,
  'POST /v1/messages': anthropicMessagesDialect,
  // A client whose base URL has no version: Codex signed in with ChatGPT, whose upstream is the
  // ChatGPT backend (`https://chatgpt.com/backend-api/codex/responses`), and OpenAI-compatible
  // servers with such a base.
  'POST /responses': responsesDialect,
  'POST /chat/completions': chatDialect,
};

export function createProxy(options: ProxyOptions): SelfGcProxy {
  const settings = resolveProxySettings(options);
  const answer = async (request: ProxyRequest): Promise<ProxyAnswer> => {
    const { method, pathname } = request;
    if (method === 'GET' && pathname === '/healthz') return health(settings);
    if (method === 'GET' && pathname === '/metrics') {
      return {
        status: 200,
        headers: new Headers({ 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
        body: settings.metrics.render(),
      };
    }
    if (isWebSocketUpgrade(request)) return refuseWebSocket(settings, request);
    const dialect = GOVERNED_ROUTES[`${method} ${pathname}`];
    if (dialect !== undefined) return handleGoverned(settings, dialect, request);
    return handlePassThrough(settings, request);
  };
  return {
    handle: async (request) => answerToWeb(await answer(requestFromWeb(request))),
    answer,
  };
}

/**
 * `ok` while the store answers; `degraded` (200, with the store's kind and breaker) while it does
 * not and requests are served through the stateless lane; `unavailable` (503) while it does not
 * and the proxy fails closed. Answers within the store's deadline: an open breaker is reported
 * without asking the store.
 */
async function health(settings: ProxySettings): Promise<ProxyAnswer> {
  if (settings.storeHealth === undefined) {
    return jsonAnswer(200, { status: 'ok', store: 'none', failOpen: settings.failOpen });
  }
  const store = await settings.storeHealth().catch(() => undefined);
  const down = store === undefined || store.status === 'down';
  const status = !down ? 'ok' : settings.failOpen ? 'degraded' : 'unavailable';
  const body = {
    status,
    store: down ? 'down' : 'ok',
    ...(store === undefined ? {} : { storeKind: store.kind, breaker: store.breaker }),
    failOpen: settings.failOpen,
  };
  return jsonAnswer(status === 'unavailable' ? 503 : 200, body);
}
