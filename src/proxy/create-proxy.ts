/**
 * The proxy as a fetch-style handler (`Request → Response`, web standard types): the governed
 * routes, everything else passed through, `/healthz` and `/metrics`. `serveProxy` binds it to
 * node:http through `answer`, the same handler without the web types; tests call `handle`
 * in-process.
 */
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { handleGoverned } from './handle-governed.js';
import { handlePassThrough } from './handle-pass-through.js';
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
    const dialect = GOVERNED_ROUTES[`${method} ${pathname}`];
    if (dialect !== undefined) return handleGoverned(settings, dialect, request);
    return handlePassThrough(settings, request);
  };
  return {
    handle: async (request) => answerToWeb(await answer(requestFromWeb(request))),
    answer,
  };
}

/** 200 while the proxy can serve; 503 when the store is down and the proxy would refuse. */
async function health(settings: ProxySettings): Promise<ProxyAnswer> {
  let store: 'ok' | 'down' | 'none' = 'none';
  if (settings.store !== undefined) {
    store = await settings.store.readSession('selfgc-healthz').then(
      () => 'ok' as const,
      () => 'down' as const,
    );
  }
  const ready = store !== 'down' || settings.failOpen;
  const body = { status: ready ? 'ok' : 'unavailable', store, failOpen: settings.failOpen };
  return jsonAnswer(ready ? 200 : 503, body);
}
