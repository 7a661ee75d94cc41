/**
 * Errors the proxy itself answers (bad input, too large, timeouts, store down), written in the
 * error format of the provider the client speaks, with the status from the one `ERROR_TABLE`.
 * Errors from the upstream are never rewritten: they pass through as they came.
 */
import { ERROR_TABLE, type ErrorCode, type SelfGcError } from '../core/errors.js';
import { jsonAnswer, type ProxyAnswer } from './proxy-exchange.js';

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
  internal: { openai: 'server_error', anthropic: 'api_error' },
};

/** The JSON error body a provider's SDK expects. */
export function providerErrorBody(provider: ProviderName, code: ErrorCode, message: string): object {
  const type = ERROR_TYPES[code][provider];
  if (provider === 'anthropic') return { type: 'error', error: { type, message } };
  return { error: { message, type, param: null, code: null } };
}

/** A complete error answer for a Self-GC error. */
export function errorAnswer(
  provider: ProviderName,
  error: SelfGcError,
  headers: Record<string, string> = {},
): ProxyAnswer {
  const body = providerErrorBody(provider, error.code, error.message);
  return jsonAnswer(ERROR_TABLE[error.code].status, body, headers);
}
