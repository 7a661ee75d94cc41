/**
 * A minimal, dependency-free LLM client over `fetch`: one `complete` call with a deadline,
 * retries with exponential backoff and jitter on 429, 5xx and network errors (honouring
 * `retry-after` and `x-should-retry`), and every failure as an `UpstreamError` whose one-line
 * message carries the provider's own error message.
 */

import { oneLine } from '../core/compact-text.js';
import { UpstreamError } from '../core/errors.js';
import { anthropicWire } from './anthropic-client.js';
import type {
  LlmClient,
  LlmClientOptions,
  LlmHttpRequest,
  LlmProvider,
  LlmRequest,
  LlmResponse,
  LlmWireFormat,
} from './llm-types.js';
import { openaiChatWire } from './openai-chat-client.js';

const WIRES: Record<LlmProvider, LlmWireFormat> = { openai: openaiChatWire, anthropic: anthropicWire };

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_RETRY_BASE_MS = 500;
const DEFAULT_RETRY_MAX_MS = 8_000;
const LONGEST_HONOURED_RETRY_AFTER_MS = 60_000;
const MESSAGE_LIMIT = 400;

/** What one attempt came to when it did not succeed. */
interface FailedAttempt {
  error: UpstreamError;
  retryable: boolean;
  /** The server's requested wait, when it gave one. */
  retryAfterMs: number | undefined;
}

export function createLlmClient(options: LlmClientOptions): LlmClient {
  const wire = WIRES[options.provider];
  const label = `${options.provider} upstream`;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;

  function backoffMs(retry: number): number {
    const step = Math.min(
      options.retryMaxMs ?? DEFAULT_RETRY_MAX_MS,
      (options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS) * 2 ** retry,
    );
    return Math.round(step / 2 + (random() * step) / 2);
  }

  async function attempt(http: LlmHttpRequest, signal: AbortSignal): Promise<LlmResponse | FailedAttempt> {
    let response: Response;
    let bodyText: string;
    try {
      response = await fetchImpl(http.url, {
        method: 'POST',
        headers: http.headers,
        body: JSON.stringify(http.body),
        signal,
      });
      bodyText = await response.text();
    } catch (cause) {
      if (signal.aborted) throw cause;
      const error = new UpstreamError(
        oneLine(`${label}: network error: ${describeNetworkError(cause)}`, MESSAGE_LIMIT),
        {
          cause,
        },
      );
      return { error, retryable: true, retryAfterMs: undefined };
    }
    const body = parseBody(bodyText);
    const status = response.status;
    if (response.ok) {
      if (body !== undefined) return { ...wire.readResponse(body), raw: body };
      throw new UpstreamError(
        oneLine(`${label} answered ${status} with a non-JSON body: ${bodyText}`, MESSAGE_LIMIT),
        {
          status,
        },
      );
    }
    const error = new UpstreamError(
      oneLine(`${label} answered ${status}: ${errorDetail(body, bodyText)}`, MESSAGE_LIMIT),
      {
        status,
      },
    );
    return { error, retryable: isRetryable(response), retryAfterMs: retryAfterMs(response.headers) };
  }

  /** `type: message` from the provider's error body, else the body text itself. */
  function errorDetail(body: unknown, bodyText: string): string {
    const providerError = body === undefined ? undefined : wire.readError(body);
    if (providerError === undefined) return bodyText || '(empty body)';
    return providerError.type === undefined
      ? providerError.message
      : `${providerError.type}: ${providerError.message}`;
  }

  async function complete(request: LlmRequest): Promise<LlmResponse> {
    const http = wire.buildRequest(options, request);
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = request.signal === undefined ? deadline : AbortSignal.any([deadline, request.signal]);
    const stopped = (cause: unknown): UpstreamError =>
      deadline.aborted
        ? new UpstreamError(`${label} timed out after ${timeoutMs} ms`, { timeout: true, cause })
        : new UpstreamError(`${label} request aborted by the caller`, {
            cause: request.signal?.reason ?? cause,
          });

    for (let retry = 0; ; retry += 1) {
      if (signal.aborted) throw stopped(signal.reason);
      let outcome: LlmResponse | FailedAttempt;
      try {
        outcome = await attempt(http, signal);
      } catch (error) {
        if (signal.aborted) throw stopped(error);
        throw error;
      }
      if (!('error' in outcome)) return outcome;
      if (!outcome.retryable || retry >= maxRetries) throw outcome.error;
      const requested = outcome.retryAfterMs;
      const waitMs =
        requested !== undefined && requested <= LONGEST_HONOURED_RETRY_AFTER_MS
          ? requested
          : backoffMs(retry);
      await sleep(waitMs, signal);
    }
  }

  return { provider: options.provider, model: options.model, complete };
}

/** 429 and 5xx are retried, other statuses not, unless the server says otherwise in `x-should-retry`. */
function isRetryable(response: Response): boolean {
  const hint = response.headers.get('x-should-retry');
  if (hint === 'true') return true;
  if (hint === 'false') return false;
  return response.status === 429 || response.status >= 500;
}

/** `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date. */
function retryAfterMs(headers: Headers): number | undefined {
  const milliseconds = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.round(milliseconds);
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `fetch failed` alone says nothing; the cause (`ECONNREFUSED`, `other side closed`) does. */
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const code = cause !== undefined && 'code' in cause ? ` ${String(cause.code)}` : '';
  return cause === undefined ? error.message : `${error.message} (${cause.message}${code})`;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
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
