/**
 * A scripted model endpoint for tests: a real HTTP server on 127.0.0.1 (ephemeral port) that
 * speaks the wire formats of OpenAI Chat Completions, OpenAI Responses and Anthropic Messages,
 * streamed or not, and answers from a script instead of a model. Every request is recorded.
 *
 * Clients point at `url + '/v1'` (OpenAI SDK `baseURL`, OpenAI-compatible base URLs) or at `url`
 * (Anthropic SDK `baseURL`).
 *
 * It refuses what the APIs refuse of a conversation's state, with their messages: a Responses
 * continuation it cannot continue (`scripted-response-store.ts`), and Messages thinking blocks out
 * of place or changed (`scripted-thinking-rules.ts`).
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anthropicErrorBody,
  anthropicErrorFrame,
  anthropicModelList,
  messageFrames,
  renderMessage,
  thinkingSignature,
} from './scripted-anthropic-wire.js';
import {
  chatCompletionFrames,
  chatErrorFrame,
  openaiErrorBody,
  openaiModelList,
  outputItems,
  renderChatCompletion,
  renderResponse,
  responseErrorFrame,
  responseFrames,
  type SseFrame,
  type WireContext,
  withoutClosingOutput,
} from './scripted-openai-wire.js';
import {
  estimateInputTokens,
  resolveContent,
  resolveUsage,
  type Script,
  type ScriptedError,
  type ScriptedReply,
  type ScriptedRequest,
} from './scripted-reply.js';
import { createResponseStore } from './scripted-response-store.js';
import { createThinkingRules } from './scripted-thinking-rules.js';

export interface ScriptedUpstreamOptions {
  /** What to answer on the generation paths (chat completions, responses, messages). */
  script: Script;
  /** Names listed by `GET /v1/models`. Default `['scripted-model']`. */
  models?: readonly string[];
  /** When set, requests must carry it as `authorization: Bearer …` or `x-api-key`, or get a 401. */
  apiKey?: string;
  /** Cached prompt tokens to report when a reply does not set them. Default 0. */
  cachedInputTokens?: number | ((request: ScriptedRequest) => number);
  /** Maximum code points per streamed delta. Default 8. */
  streamChunkChars?: number;
  /** Pause between streamed events, in ms. Default 0 (a yield to the event loop). */
  chunkDelayMs?: number;
  /**
   * Write each event in two network writes split mid-way (possibly inside a UTF-8 sequence), so
   * stream parsers must reassemble lines. Default true.
   */
  fragmentEvents?: boolean;
  /** Clock for `created` fields. Default `Date.now`. */
  now?: () => number;
  /**
   * Whether Messages has the preserved-thinking controls (default true): false plays a platform
   * without them, as Bedrock for a model that lacks them (`scripted-thinking-rules.ts`).
   */
  thinkingBinding?: boolean;
  /**
   * Responses: close each streamed answer as the ChatGPT backend (Codex signed in with ChatGPT)
   * does, its `response.completed` holding no `output` (the items came in their own events).
   * Default false.
   */
  emptyClosingOutput?: boolean;
}

export interface ScriptedUpstream {
  /** `http://127.0.0.1:<port>`, without `/v1`. */
  url: string;
  /** Every request received, in order (a live array). */
  requests: ScriptedRequest[];
  /** Append replies to a queue script. */
  enqueue(...replies: ScriptedReply[]): void;
  /** Replies left in a queue script (0 for a function script). */
  remaining(): number;
  /** Stop listening and drop open connections, including hanging requests. */
  close(): Promise<void>;
}

type Route = 'chat' | 'responses' | 'messages' | 'count-tokens' | 'models';
type Dialect = 'openai' | 'anthropic';

const ROUTES: Record<string, Route> = {
  'POST /v1/chat/completions': 'chat',
  'POST /v1/responses': 'responses',
  'POST /v1/messages': 'messages',
  'POST /v1/messages/count_tokens': 'count-tokens',
  'POST /v1/responses/input_tokens': 'count-tokens',
  'GET /v1/models': 'models',
  // An upstream whose base has no version, as the ChatGPT backend's (`…/backend-api/codex`).
  'POST /responses': 'responses',
  'POST /chat/completions': 'chat',
  'GET /models': 'models',
};

const GENERATORS = {
  chat: {
    json: renderChatCompletion,
    frames: chatCompletionFrames,
    errorFrame: chatErrorFrame,
    toolCallPrefix: 'call_',
  },
  responses: {
    json: renderResponse,
    frames: responseFrames,
    errorFrame: responseErrorFrame,
    toolCallPrefix: 'call_',
  },
  messages: {
    json: renderMessage,
    frames: messageFrames,
    errorFrame: anthropicErrorFrame,
    toolCallPrefix: 'toolu_',
  },
} as const;

export async function startScriptedUpstream(options: ScriptedUpstreamOptions): Promise<ScriptedUpstream> {
  const requests: ScriptedRequest[] = [];
  const queue = typeof options.script === 'function' ? undefined : [...options.script];
  const closing = new AbortController();
  const responses = createResponseStore();
  const thinking = createThinkingRules(
    options.thinkingBinding === undefined ? {} : { binding: options.thinkingBinding },
  );

  async function nextReply(request: ScriptedRequest): Promise<ScriptedReply> {
    if (typeof options.script === 'function') return options.script(request);
    const reply = queue?.shift();
    if (reply !== undefined) return reply;
    const message = `scripted upstream: script exhausted at request #${request.index} (${request.path})`;
    return { error: { status: 422, message } };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const signal = requestSignal(res, closing.signal);
    const rawBody = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const headers = flattenHeaders(req);
    const parsed = parseBody(rawBody);
    const request: ScriptedRequest = {
      index: requests.length,
      method,
      path: url.pathname,
      headers,
      body: parsed.value,
      rawBody,
    };
    requests.push(request);
    res.on('close', () => {
      if (!res.writableFinished) request.abandoned = true;
    });

    const route = ROUTES[`${method} ${url.pathname}`];
    const dialect = dialectOf(url.pathname, headers['anthropic-version']);
    const ids = idsFor(request.index);
    const fail = (error: ScriptedError) => sendError(res, dialect, error, ids.requestId, {});

    if (route === undefined)
      return fail({ status: 404, message: `scripted upstream: no route for ${method} ${url.pathname}` });
    if (options.apiKey !== undefined && !isAuthorized(headers, options.apiKey)) {
      return fail({ status: 401, message: 'scripted upstream: invalid API key' });
    }
    if (method === 'POST' && !parsed.ok)
      return fail({ status: 400, message: 'scripted upstream: body is not JSON' });

    const models = options.models ?? ['scripted-model'];
    if (route === 'models')
      return sendJson(
        res,
        200,
        dialect === 'anthropic' ? anthropicModelList(models) : openaiModelList(models),
      );
    if (route === 'count-tokens') {
      const count = { input_tokens: estimateInputTokens(parsed.value) };
      return sendJson(
        res,
        200,
        dialect === 'anthropic' ? count : { object: 'response.input_tokens', ...count },
      );
    }

    const body = isRecord(parsed.value) ? parsed.value : {};
    const refusal =
      route === 'responses'
        ? responses.refusal(body)
        : route === 'messages'
          ? thinking.refusal(body, headers)
          : undefined;
    if (refusal !== undefined) return fail(refusal);
    if (route === 'messages') {
      const dropped = thinking.invalidated(body);
      if (dropped.length > 0) request.thinkingDropped = dropped;
    }

    const reply = await nextReply(request);
    if (reply.delayMs !== undefined) await pause(reply.delayMs, signal);
    if (reply.hang === true) await untilAborted(signal);
    if (signal.aborted) return;
    if (reply.disconnect === true) return void req.socket.destroy();
    if (reply.raw !== undefined)
      return sendRaw(res, reply.raw.status ?? 200, reply.raw.headers ?? {}, reply.raw.body);
    if (reply.error !== undefined)
      return sendError(res, dialect, reply.error, ids.requestId, reply.headers ?? {});

    const generator = GENERATORS[route];
    const content = resolveContent(reply, (position) => `${generator.toolCallPrefix}${ids.id}_${position}`);
    const cached = options.cachedInputTokens;
    const defaultCached = typeof cached === 'function' ? cached(request) : (cached ?? 0);
    const context: WireContext = {
      id: ids.id,
      model: reply.model ?? (typeof body.model === 'string' ? body.model : 'scripted-model'),
      created: Math.floor((options.now ?? Date.now)() / 1000),
      content,
      usage: resolveUsage(reply, content, body, defaultCached),
      body,
      chunkChars: options.streamChunkChars ?? 8,
    };
    const answerHeaders = { ...requestIdHeader(dialect, ids.requestId), ...reply.headers };
    const cut = reply.cutStream;
    if (route === 'responses' && cut === undefined)
      responses.remember(body, `resp_${ids.id}`, outputItems(context));
    if (route === 'messages' && content.thinking !== undefined)
      thinking.issued(thinkingSignature(ids.id), content.thinking, body);
    if (body.stream !== true) return sendJson(res, 200, generator.json(context), answerHeaders);
    let frames = generator.frames(context);
    if (route === 'responses' && options.emptyClosingOutput === true) frames = withoutClosingOutput(frames);
    if (cut !== undefined) {
      frames = frames.slice(0, cut.afterEvents);
      if (cut.error !== undefined) frames.push(generator.errorFrame(cut.error, ids.requestId, frames.length));
    }
    await streamFrames(res, frames, answerHeaders, signal, {
      delayMs: options.chunkDelayMs ?? 0,
      fragment: options.fragmentEvents ?? true,
      drop: cut !== undefined && cut.error === undefined,
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const message = `scripted upstream: ${error instanceof Error ? error.message : String(error)}`;
      if (res.headersSent) return void res.destroy();
      const dialect = dialectOf(req.url ?? '/', req.headers['anthropic-version']);
      sendError(res, dialect, { status: 500, message }, 'req_scripted_failure', {});
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...replies) => {
      if (queue === undefined)
        throw new Error('scripted upstream: enqueue needs a queue script, not a function');
      queue.push(...replies);
    },
    remaining: () => queue?.length ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Anthropic paths and callers that send `anthropic-version` get Anthropic-shaped answers. */
function dialectOf(path: string, anthropicVersion: string | string[] | undefined): Dialect {
  return path.startsWith('/v1/messages') || anthropicVersion !== undefined ? 'anthropic' : 'openai';
}

function idsFor(index: number): { id: string; requestId: string } {
  const id = `scripted${String(index).padStart(4, '0')}`;
  return { id, requestId: `req_${id}` };
}

function requestIdHeader(dialect: Dialect, requestId: string): Record<string, string> {
  return dialect === 'anthropic' ? { 'request-id': requestId } : { 'x-request-id': requestId };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(rawBody: string): { ok: boolean; value: unknown } {
  if (rawBody === '') return { ok: false, value: undefined };
  try {
    return { ok: true, value: JSON.parse(rawBody) };
  } catch {
    return { ok: false, value: rawBody };
  }
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function isAuthorized(headers: Record<string, string>, apiKey: string): boolean {
  return headers.authorization === `Bearer ${apiKey}` || headers['x-api-key'] === apiKey;
}

/** Aborts when the client goes away before the answer is complete, or when the server closes. */
function requestSignal(res: ServerResponse, closing: AbortSignal): AbortSignal {
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  return AbortSignal.any([gone.signal, closing]);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return pause(2_147_483_647, signal);
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: object,
  headers: Record<string, string> = {},
): void {
  sendRaw(res, status, { 'content-type': 'application/json', ...headers }, JSON.stringify(body));
}

function sendRaw(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | object,
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const contentType = typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
  res.writeHead(status, { 'content-type': contentType, ...headers });
  res.end(text);
}

function sendError(
  res: ServerResponse,
  dialect: Dialect,
  error: ScriptedError,
  requestId: string,
  headers: Record<string, string>,
): void {
  const body = dialect === 'anthropic' ? anthropicErrorBody(error, requestId) : openaiErrorBody(error);
  sendJson(res, error.status, body, { ...requestIdHeader(dialect, requestId), ...headers });
}

function encodeFrame(frame: SseFrame): Buffer {
  const eventLine = frame.event === undefined ? '' : `event: ${frame.event}\n`;
  return Buffer.from(`${eventLine}data: ${frame.data}\n\n`, 'utf8');
}

async function streamFrames(
  res: ServerResponse,
  frames: SseFrame[],
  headers: Record<string, string>,
  signal: AbortSignal,
  pacing: { delayMs: number; fragment: boolean; drop?: boolean },
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  res.flushHeaders();
  for (const frame of frames) {
    if (signal.aborted) return;
    const bytes = encodeFrame(frame);
    if (pacing.fragment) {
      const cut = Math.floor(bytes.length / 2);
      res.write(bytes.subarray(0, cut));
      await pause(0, signal);
      res.write(bytes.subarray(cut));
    } else {
      res.write(bytes);
    }
    await pause(pacing.delayMs, signal);
  }
  // A dropped connection ends without the last chunk: the client sees the stream break off.
  if (pacing.drop === true) res.destroy();
  else res.end();
}
