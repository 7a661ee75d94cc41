/**
 * The measurements of one request: metrics as it goes, and the one log entry when it ends.
 */
import { randomUUID } from 'node:crypto';
import { type SelfGcError, toSelfGcError } from '../core/errors.js';
import type { Arm } from './ab-split.js';
import { errorAnswer, hiddenErrorDetail, type ProviderName } from './proxy-errors.js';
import type { ProxyAnswer, ProxyRequest } from './proxy-exchange.js';
import type { ProxyLogEntry } from './proxy-log.js';
import type { ProxySettings } from './proxy-options.js';
import type { TokenUsage } from './wire-dialect.js';

/** Add warning codes to the answer's `x-selfgc-warnings` and to the log entry, each once. */
export function addWarnings(headers: Headers, entry: ProxyLogEntry, codes: readonly string[]): void {
  const warnings = new Set([...(headers.get('x-selfgc-warnings')?.split(',') ?? []), ...codes]);
  headers.set('x-selfgc-warnings', [...warnings].join(','));
  entry.warnings = [...new Set([...(entry.warnings ?? []), ...codes])];
}

export interface RequestTrace {
  readonly arm: Arm;
  /** Names this request's log entry; sent to the client in `x-selfgc-request-id`. */
  readonly requestId: string;
  /** Log fields filled in along the way. */
  readonly entry: ProxyLogEntry;
  /** Time an upstream call took, added to the request's upstream total. */
  addUpstreamTime(milliseconds: number): void;
  /** Usage of one upstream answer. */
  addUsage(usage: Partial<TokenUsage> | undefined): void;
  /** The response's headers are ready: count the request and the time the proxy added. */
  respond(status: number): void;
  /** The response is complete (or abandoned): write the log entry. */
  end(outcome?: 'failed' | 'cancelled'): void;
  /**
   * Count a failure and log its code, and what the client does not see of it; returns it as a
   * Self-GC error (a stream that already began ends with it in an event of its own).
   */
  record(error: unknown): SelfGcError;
  /** Count and log a Self-GC error and turn it into an answer in the provider's format. */
  fail(error: unknown, provider: ProviderName, headers: Headers): ProxyAnswer;
}

/** Status logged when the client went away before an answer (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

export function createRequestTrace(
  settings: ProxySettings,
  request: ProxyRequest,
  route: string,
  arm: Arm,
): RequestTrace {
  const started = settings.now();
  const requestId = `req_${randomUUID().replaceAll('-', '')}`;
  const entry: ProxyLogEntry = {
    time: new Date(started).toISOString(),
    requestId,
    method: request.method,
    path: request.pathname,
    route,
    arm,
    status: 0,
    latencyMs: 0,
  };
  const labels = { arm };
  let upstreamMs = 0;
  let usageSeen = false;
  let ended = false;
  const round = (value: number) => Math.round(value * 1000) / 1000;

  const trace: RequestTrace = {
    arm,
    requestId,
    entry,
    addUpstreamTime(milliseconds) {
      upstreamMs += milliseconds;
      settings.metrics.observe('selfgc_proxy_upstream_seconds', { ...labels, route }, milliseconds / 1000);
    },
    addUsage(usage) {
      if (usage?.inputTokens === undefined) return;
      usageSeen = true;
      entry.inputTokens = (entry.inputTokens ?? 0) + usage.inputTokens;
      entry.cachedTokens = (entry.cachedTokens ?? 0) + (usage.cachedTokens ?? 0);
    },
    respond(status) {
      entry.status = status;
      const elapsed = settings.now() - started;
      settings.metrics.count('selfgc_proxy_requests_total', { ...labels, route, status: String(status) });
      if (upstreamMs > 0) {
        settings.metrics.observe(
          'selfgc_proxy_overhead_seconds',
          labels,
          Math.max(0, elapsed - upstreamMs) / 1000,
        );
      }
    },
    end(outcome) {
      if (ended) return;
      ended = true;
      entry.latencyMs = round(settings.now() - started);
      if (upstreamMs > 0) entry.upstreamMs = round(upstreamMs);
      if (outcome !== undefined) entry.outcome = outcome;
      if (usageSeen) {
        settings.metrics.count('selfgc_proxy_input_tokens_total', labels, entry.inputTokens ?? 0);
        settings.metrics.count('selfgc_proxy_cached_input_tokens_total', labels, entry.cachedTokens ?? 0);
      }
      settings.log(entry);
    },
    record(error) {
      const selfGcError: SelfGcError = toSelfGcError(error);
      settings.metrics.count('selfgc_proxy_errors_total', { ...labels, code: selfGcError.code });
      entry.error = selfGcError.code;
      const detail = hiddenErrorDetail(selfGcError);
      if (detail !== undefined) entry.detail = detail;
      return selfGcError;
    },
    fail(error, provider, headers) {
      if (request.signal.aborted) {
        trace.respond(CLIENT_CLOSED_STATUS);
        trace.end('cancelled');
        return { status: CLIENT_CLOSED_STATUS, headers: new Headers(), body: null };
      }
      const selfGcError = trace.record(error);
      const answer = errorAnswer(provider, selfGcError, requestId, Object.fromEntries(headers));
      trace.respond(answer.status);
      trace.end();
      return answer;
    },
  };
  return trace;
}
