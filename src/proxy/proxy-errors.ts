/**
 * Errors the proxy itself answers (bad input, too large, timeouts, store down), written in the
 * error format of the provider the client speaks, with the status from the one `ERROR_TABLE`.
 * Errors from the upstream pass through as they came; one that refuses a round of a stream the
 * client already reads goes on in that stream's error event (`upstreamErrorBody`).
 */
import { ERROR_TABLE, type ErrorCode, type SelfGcError } from '../core/errors.js';
import { jsonAnswer, type ProxyAnswer } from './proxy-exchange.js';
import { isJsonObject, type JsonObject } from './wire-dialect.js';

export type ProviderName = 'openai' | 'anthropic';

/** The provider's error `type` for each Self-GC error code. */
const ERROR_TYPES: Record<ErrorCode, Record<ProviderName, string>> = {
  'bad-input': { openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  'not-found': { openai: 'invalid_request_error', anthropic: 'not_found_error' },
  'payload-too-large': { openai: 'invalid_request_error', anthropic: 'request_too_large' },
  'plan-rejected': { openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  'store-failure': { openai: 'server_error', anthropic: 'api_error' },
  'upstream-failure': { openai: 'server_error', anthropic: 'api_error' },
  'upstream-timeout': { openai: 'server_error', anthropic: 'timeout_error' },
  'upgrade-required': { openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  internal: { openai: 'server_error', anthropic: 'api_error' },
};

/**
 * What a client reads for each code. Its own input's faults (and the timeout it ran into) are
 * described in full; the proxy's own failures get fixed words, because their messages carry
 * what only the operator should see (store addresses, driver messages): those go to the log,
 * found by the request id.
 */
const PUBLIC_MESSAGES: Record<ErrorCode, string | undefined> = {
  'bad-input': undefined,
  'payload-too-large': undefined,
  'upstream-timeout': undefined,
  'upgrade-required': undefined,
  'not-found': 'not found',
  'plan-rejected': 'the governance plan was rejected',
  'store-failure': 'the session store is unavailable; retry later',
  'upstream-failure': 'the upstream failed or could not be reached',
  internal: 'internal proxy error',
};

/** The stable code a client can match on, in the error body: `selfgc_store_failure`, … */
export function publicErrorCode(code: ErrorCode): string {
  return `selfgc_${code.replaceAll('-', '_')}`;
}

/** The message a client may read for an error: its own, or fixed words naming the request. */
export function publicErrorMessage(error: SelfGcError, requestId: string): string {
  const fixed = PUBLIC_MESSAGES[error.code];
  return fixed === undefined
    ? error.message
    : `${fixed} (request ${requestId}; details are in the proxy log)`;
}

/** The message the client does not see, for the log; undefined when the client sees it whole. */
export function hiddenErrorDetail(error: SelfGcError): string | undefined {
  return PUBLIC_MESSAGES[error.code] === undefined ? undefined : error.message;
}

/**
 * The JSON error body a provider's SDK expects, with the stable code and the request id
 * (top-level `request_id`, where Anthropic's own error bodies carry it).
 */
function providerErrorBody(
  provider: ProviderName,
  code: ErrorCode,
  message: string,
  requestId: string,
): JsonObject {
  const type = ERROR_TYPES[code][provider];
  const stableCode = publicErrorCode(code);
  if (provider === 'anthropic') {
    return { type: 'error', error: { type, message, code: stableCode }, request_id: requestId };
  }
  return { error: { message, type, param: null, code: stableCode }, request_id: requestId };
}

/** The header every answer of the proxy carries, naming its log entry. */
export const REQUEST_ID_HEADER = 'x-selfgc-request-id';

/** A Self-GC error as its answer's status and the provider's error body the client may read. */
export function publicError(
  provider: ProviderName,
  error: SelfGcError,
  requestId: string,
): { status: number; body: JsonObject } {
  const body = providerErrorBody(provider, error.code, publicErrorMessage(error, requestId), requestId);
  return { status: ERROR_TABLE[error.code].status, body };
}

/** A complete error answer for a Self-GC error: never its internal message (see above). */
export function errorAnswer(
  provider: ProviderName,
  error: SelfGcError,
  requestId: string,
  headers: Record<string, string> = {},
): ProxyAnswer {
  const { status, body } = publicError(provider, error, requestId);
  return jsonAnswer(status, body, { ...headers, [REQUEST_ID_HEADER]: requestId });
}

/** Anthropic's error `type` for an HTTP status, as its API documents them. */
function anthropicErrorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    504: 'timeout_error',
    529: 'overloaded_error',
  };
  return byStatus[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * An upstream's error answer (`json`: its body parsed, if it was JSON) as the provider's error
 * body: the upstream's own when it sent one (a client reads its type: an overload, a rate limit,
 * the context window), on Anthropic with the type its status gives when it names none; else one
 * made from the status (a gateway's HTML page).
 */
export function upstreamErrorBody(provider: ProviderName, status: number, json: unknown): JsonObject {
  if (isJsonObject(json) && isJsonObject(json.error)) {
    if (provider === 'openai') return json;
    const type = typeof json.error.type === 'string' ? json.error.type : anthropicErrorType(status);
    return { ...json, type: 'error', error: { ...json.error, type } };
  }
  const message = `upstream answered ${status}`;
  if (provider === 'anthropic')
    return { type: 'error', error: { type: anthropicErrorType(status), message } };
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: status === 429 ? 'rate_limit_exceeded' : null } };
}
