/**
 * Every route the proxy does not govern (model lists, embeddings, token counting, …): forwarded
 * untouched, body and answer streamed, to the upstream of the provider the request speaks.
 */
import { SelfGcError } from '../core/errors.js';
import { chooseArm } from './ab-split.js';
import { callUpstream, clientResponseHeaders, upstreamRequestHeaders } from './call-upstream.js';
import { errorAnswer, type ProviderName, REQUEST_ID_HEADER } from './proxy-errors.js';
import type { ProxyAnswer, ProxyRequest } from './proxy-exchange.js';
import type { ProxySettings } from './proxy-options.js';
import { createRequestTrace } from './request-trace.js';
import { namespaceOf } from './session-identity.js';

/** Anthropic paths, and callers that send Anthropic's headers, go to the Anthropic upstream. */
export function providerOf(request: ProxyRequest): ProviderName {
  const { pathname } = request;
  if (pathname.startsWith('/v1/messages') || pathname.startsWith('/v1/complete')) return 'anthropic';
  return request.headers.has('anthropic-version') || request.headers.has('x-api-key')
    ? 'anthropic'
    : 'openai';
}

export async function handlePassThrough(
  settings: ProxySettings,
  request: ProxyRequest,
): Promise<ProxyAnswer> {
  const provider = providerOf(request);
  const { keyHash } = namespaceOf(request.headers, settings.tenancy, request.remoteAddress);
  const arm = chooseArm(keyHash, settings.abSplit);
  const trace = createRequestTrace(settings, request, 'pass-through', arm);
  const started = settings.now();
  try {
    const body = request.method !== 'GET' && request.method !== 'HEAD' ? request.body() : null;
    const call = await callUpstream({
      transport: settings.upstream,
      url: `${settings.upstreams[provider]}${request.pathname}${request.search}`,
      method: request.method,
      headers: upstreamRequestHeaders(request.headers),
      body,
      timeoutMs: settings.upstreamTimeoutMs,
      signal: request.signal,
    }).finally(() => trace.addUpstreamTime(settings.now() - started));
    call.settle();
    const { answer } = call;
    trace.respond(answer.status);
    const source = answer.body;
    const stream = source === null ? null : passThrough(source, (outcome) => trace.end(outcome));
    if (stream === null) trace.end();
    const headers = clientResponseHeaders(answer.headers);
    headers.set(REQUEST_ID_HEADER, trace.requestId);
    return { status: answer.status, headers, body: stream };
  } catch (error) {
    return trace.fail(error, provider, new Headers());
  }
}

/** Whether a request asks to become a WebSocket (RFC 6455's `Upgrade: websocket`, any version). */
export function isWebSocketUpgrade(request: ProxyRequest): boolean {
  const upgrade = request.headers.get('upgrade');
  return upgrade !== null && /(^|,)\s*websocket(\/[^,\s]*)?\s*(,|$)/i.test(upgrade);
}

/**
 * A WebSocket handshake, on any path, is refused with 426: governance reads HTTP bodies, and
 * forwarded without its upgrade the handshake would reach the upstream as a plain GET (no
 * WebSocket API, Realtime included, is carried). Codex CLI's built-in OpenAI provider opens a
 * Responses WebSocket first and takes a 426 as the word to use HTTP for the session; any other
 * answer costs it five retries and about twenty seconds. Logged and counted as a request (route
 * `websocket`), not as an error: every such Codex session sends one.
 */
export function refuseWebSocket(settings: ProxySettings, request: ProxyRequest): ProxyAnswer {
  const { keyHash } = namespaceOf(request.headers, settings.tenancy, request.remoteAddress);
  const trace = createRequestTrace(settings, request, 'websocket', chooseArm(keyHash, settings.abSplit));
  const refusal = new SelfGcError(
    'upgrade-required',
    `${request.method} ${request.pathname}: the selfgc proxy does not carry WebSockets; send the request over HTTP`,
  );
  const answer = errorAnswer(providerOf(request), refusal, trace.requestId);
  trace.respond(answer.status);
  trace.end();
  return answer;
}

/** The same bytes, with a callback when the stream is done. */
function passThrough(
  source: ReadableStream<Uint8Array>,
  onEnd: (outcome?: 'failed' | 'cancelled') => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          onEnd();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        onEnd('failed');
        controller.error(error);
      }
    },
    async cancel(reason) {
      onEnd('cancelled');
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}
