/**
 * The proxy as a fetch-style handler (`Request → Response`, web standard types): the governed
 * routes, everything else passed through, `/healthz` and `/metrics`. `serveProxy` binds it to
 * node:http; tests call `handle` in-process.
 */
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { handleGoverned } from './handle-governed.js';
import { handlePassThrough } from './handle-pass-through.js';
import { type ProxyOptions, type ProxySettings, resolveProxySettings } from './proxy-options.js';
import { responsesDialect } from './responses-dialect.js';
import type { WireDialect } from './wire-dialect.js';

export interface SelfGcProxy {
  handle(request: Request): Promise<Response>;
}

const GOVERNED_ROUTES: Readonly<Record<string, WireDialect>> = {
  'POST /v1/chat/completions': chatDialect,
  'POST /v1/responses': responsesDialect,
  'POST /v1/messages': anthropicMessagesDialect,
};

export function createProxy(options: ProxyOptions): SelfGcProxy {
  const settings = resolveProxySettings(options);
  return {
    async handle(request) {
      const { pathname } = new URL(request.url);
      if (request.method === 'GET' && pathname === '/healthz') return health(settings);
      if (request.method === 'GET' && pathname === '/metrics') {
        return new Response(settings.metrics.render(), {
          headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' },
        });
      }
      const dialect = GOVERNED_ROUTES[`${request.method} ${pathname}`];
      if (dialect !== undefined) return handleGoverned(settings, dialect, request);
      return handlePassThrough(settings, request);
    },
  };
}

/** 200 while the proxy can serve; 503 when the store is down and the proxy would refuse. */
async function health(settings: ProxySettings): Promise<Response> {
  let store: 'ok' | 'down' | 'none' = 'none';
  if (settings.store !== undefined) {
    store = await settings.store.readSession('selfgc-healthz').then(
      () => 'ok' as const,
      () => 'down' as const,
    );
  }
  const ready = store !== 'down' || settings.failOpen;
  const body = { status: ready ? 'ok' : 'unavailable', store, failOpen: settings.failOpen };
  return Response.json(body, { status: ready ? 200 : 503 });
}
