/**
 * The official SDKs' stream helpers reading a governed route of a served proxy on loopback, as an
 * agent CLI would: `chat.completions.stream`, `responses.stream`, `messages.stream`. Each returns
 * what the SDK accumulated, and keeps the exact text of the stream it read.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Wire } from '../../testing/upstream-test-kit.js';
import type { WireRoute } from './agent-conversation.js';

/** What a client's SDK made of a streamed answer. */
export interface Accumulated {
  text: string;
  toolCalls: Array<{ name: string; arguments: unknown }>;
  /** `finish_reason`, `stop_reason` or the response's `status`. */
  stop: string | null;
  /** The SDK's final object. */
  final: Wire;
  /** The stream as received. */
  raw: string;
  /** The headers of the proxy's answer. */
  headers: Headers;
}

/** A fetch that gives the SDK its answer and keeps a copy of the body's text. */
function recordingFetch(texts: Array<Promise<string>>, headers: Headers[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    headers.push(response.headers);
    if (response.body === null) return response;
    const [kept, given] = response.body.tee();
    texts.push(new Response(kept).text());
    return new Response(given, { status: response.status, headers: response.headers });
  };
}

async function accumulate(route: WireRoute, url: string, body: Wire, fetchImpl: typeof fetch) {
  const options = { apiKey: 'sk-test-key', maxRetries: 0, fetch: fetchImpl };
  if (route === 'messages') {
    const final = await new Anthropic({ ...options, baseURL: url }).messages.stream(body).finalMessage();
    const blocks = final.content as Wire[];
    return {
      text: blocks
        .filter((block) => block.type === 'text')
        .map((block) => block.text)
        .join(''),
      toolCalls: blocks
        .filter((block) => block.type === 'tool_use')
        .map((block) => ({ name: block.name, arguments: block.input })),
      stop: final.stop_reason,
      final,
    };
  }
  const openai = new OpenAI({ ...options, baseURL: `${url}/v1` });
  if (route === 'responses') {
    const final = await openai.responses.stream(body).finalResponse();
    const messages = (final.output as Wire[]).filter((item) => item.type === 'message');
    return {
      text: messages.flatMap((item) => item.content.map((part: Wire) => part.text ?? '')).join(''),
      toolCalls: (final.output as Wire[])
        .filter((item) => item.type === 'function_call')
        .map((item) => ({ name: item.name, arguments: JSON.parse(item.arguments) })),
      stop: final.status ?? null,
      final,
    };
  }
  const final = await openai.chat.completions
    .stream({ ...body, stream_options: { include_usage: true } })
    .finalChatCompletion();
  const choice = final.choices[0] as Wire;
  return {
    text: choice.message.content ?? '',
    toolCalls: ((choice.message.tool_calls ?? []) as Wire[]).map((call) => ({
      name: call.function.name,
      arguments: JSON.parse(call.function.arguments),
    })),
    stop: choice.finish_reason,
    final,
  };
}

/**
 * Stream `body` through the route's SDK from the proxy at `url`. When the SDK fails, the error
 * is thrown with the raw stream attached as `raw`.
 */
export async function streamWithSdk(route: WireRoute, url: string, body: Wire): Promise<Accumulated> {
  const texts: Array<Promise<string>> = [];
  const headers: Headers[] = [];
  try {
    const result = await accumulate(route, url, body, recordingFetch(texts, headers));
    return { ...result, raw: (await Promise.all(texts)).join(''), headers: headers[0] ?? new Headers() };
  } catch (error) {
    const raw = (await Promise.all(texts).catch(() => [])).join('');
    // The OpenAI SDK rejects a Responses stream's `error` event with the event itself.
    const message = (error as { message?: unknown } | undefined)?.message;
    const thrown =
      error instanceof Error ? error : new Error(typeof message === 'string' ? message : String(error));
    throw Object.assign(thrown, { raw });
  }
}
