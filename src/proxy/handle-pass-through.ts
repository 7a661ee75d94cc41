/**
 * Every route the proxy does not govern (model lists, embeddings, token counting, …): forwarded
 * untouched, body and answer streamed, to the upstream of the provider the request speaks.
 */
import { chooseArm } from './ab-split.js';
import { callUpstream, clientResponseHeaders, upstreamRequestHeaders } from './call-upstream.js';
import { type ProviderName, REQUEST_ID_HEADER } from './proxy-errors.js';
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
