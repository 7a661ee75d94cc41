/**
 * The governance step of a governed request: ask the governor for the view of the session and
 * put it in the body, or, when that fails, serve the request ungoverned (fail open) or refuse it.
 */
import { toSelfGcError } from '../core/errors.js';
import type { Governor, ProjectResult } from '../core/governor/governor-types.js';
import type { Message } from '../core/transcript.js';
import type { ProxySettings } from './proxy-options.js';
import type { RequestTrace } from './request-trace.js';
import type { SessionIdentity } from './session-identity.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

export interface GovernedBody {
  /** The body to send, or undefined to send the client's bytes unchanged. */
  body: JsonObject | undefined;
  /** The governor and its answer, when governance ran. */
  governor?: Governor;
  result?: ProjectResult;
}

export interface GovernInput {
  dialect: WireDialect;
  body: JsonObject;
  model: string;
  transcript: Message[];
  identity: SessionIdentity;
  trace: Pick<RequestTrace, 'arm' | 'entry'>;
  headers: Headers;
  signal: AbortSignal;
}

export async function governRequest(
  settings: Pick<ProxySettings, 'failOpen' | 'metrics' | 'now' | 'governorFor'>,
  input: GovernInput,
): Promise<GovernedBody> {
  const { dialect, trace, headers } = input;
  const labels = { arm: trace.arm };
  const ungoverned = dialect.ungovernedReason?.(input.body);
  const governor =
    trace.arm === 'governed' && ungoverned === undefined
      ? settings.governorFor({ provider: dialect.provider, model: input.model })
      : undefined;
  if (governor === undefined) {
    headers.set('x-selfgc-governance', ungoverned ?? 'off');
    trace.entry.governance = ungoverned ?? 'off';
    return { body: undefined };
  }
  const started = settings.now();
  let result: ProjectResult;
  try {
    result = await governor.project(input.identity.storeSessionId, input.transcript, {
      signal: input.signal,
    });
  } catch (error) {
    const selfGcError = toSelfGcError(error);
    if (!settings.failOpen || input.signal.aborted) throw selfGcError;
    settings.metrics.count('selfgc_proxy_errors_total', { ...labels, code: selfGcError.code });
    settings.metrics.count('selfgc_proxy_fail_open_total', labels);
    headers.set('x-selfgc-governance', 'fail-open');
    trace.entry.governance = 'fail-open';
    trace.entry.error = selfGcError.code;
    trace.entry.detail = selfGcError.message;
    return { body: undefined };
  } finally {
    settings.metrics.observe('selfgc_proxy_planner_seconds', labels, (settings.now() - started) / 1000);
  }
  const saved = Math.max(0, result.transcriptTokens - result.viewTokens);
  settings.metrics.count('selfgc_proxy_transcript_tokens_total', labels, result.transcriptTokens);
  settings.metrics.count('selfgc_proxy_tokens_saved_total', labels, saved);
  headers.set('x-selfgc-tokens-before', String(result.transcriptTokens));
  headers.set('x-selfgc-tokens-after', String(result.viewTokens));
  headers.set('x-selfgc-governance', result.decision.outcome);
  Object.assign(trace.entry, {
    tokensBefore: result.transcriptTokens,
    tokensAfter: result.viewTokens,
    governance: result.decision.outcome,
    ...(result.warnings.length > 0 ? { warnings: result.warnings.map((warning) => warning.code) } : {}),
  });
  if (result.commits.length > 0) {
    // Usually one; a window rescue after the planner's commit makes two.
    const ids = result.commits.map((commit) => commit.commitId).join(', ');
    settings.metrics.count('selfgc_proxy_commits_total', labels, result.commits.length);
    headers.set('x-selfgc-commit', ids);
    trace.entry.commit = ids;
  }
  return { body: dialect.writeTranscript(input.body, result.view), governor, result };
}
