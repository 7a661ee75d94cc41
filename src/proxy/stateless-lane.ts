/**
 * The stateless lane: a governed request that governance cannot take (its store is unavailable,
 * governance failed, or the request is over governance's budget of size or time) still leaves
 * inside the window, through `reduceToWindow` — no store, deterministic, cache-friendly. Every
 * such request is counted in `selfgc_proxy_stateless_lane_total{reason}` and logged with its
 * reason (`lane`); one whose transcript had to be reduced is flagged in `x-selfgc-warnings`
 * (`stateless-reduction`).
 */
import { reduceToWindow } from '../core/reduce-to-window.js';
import type { Message } from '../core/transcript.js';
import type { GovernSettings } from './govern-request.js';
import { reserveOf } from './request-reserve.js';
import { addWarnings, type RequestTrace } from './request-trace.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

/** Why a request went through the stateless lane. */
export type LaneReason =
  /** The store failed or its breaker is open. */
  | 'store-unavailable'
  /** Governance failed for another reason (its worker died, an internal error). */
  | 'governance-failed'
  /** The body is over `governanceMaxBytes`. */
  | 'over-size'
  /** Governance (its wait for a worker included) took longer than `governanceTimeBudgetMs`. */
  | 'over-time';

/**
 * Set when `x-selfgc-tokens-before` and `-after` are upper bounds, not counts: governance sent the
 * request before its newest messages were counted (the window was far), or the lane counted a
 * huge text by its bytes.
 */
export const TOKENS_BOUND_HEADER = 'x-selfgc-tokens-bound';

/** The warning code of a request reduced by the stateless lane. */
export const STATELESS_REDUCTION = 'stateless-reduction';

/**
 * The warning code of a request that goes upstream over the window: its system prompt and latest
 * turn alone are over it, or what stands beside the conversation leaves the view less than its
 * least room.
 */
export const OVER_WINDOW = 'over-window';

export interface LaneInput {
  dialect: WireDialect;
  body: JsonObject;
  model: string;
  transcript: Message[];
  requestHeaders: Headers;
  /** The `x-selfgc-*` headers of the answer (filled in here). */
  headers: Headers;
  trace: Pick<RequestTrace, 'arm' | 'entry'>;
}

export type LaneSettings = Pick<
  GovernSettings,
  'metrics' | 'windowFor' | 'tokenCounterFor' | 'reserveOutput'
>;

/**
 * The body to send for a request governance could not take: its transcript reduced into the
 * window, or undefined when it fits as it is (the client's own bytes then go upstream).
 */
export function reduceStatelessly(
  settings: LaneSettings,
  input: LaneInput,
  reason: LaneReason,
): JsonObject | undefined {
  const { dialect, trace, headers } = input;
  const counter = settings.tokenCounterFor(dialect.provider);
  const window = settings.windowFor(input.model, input.requestHeaders);
  const reserve = reserveOf({
    dialect,
    body: input.body,
    window,
    tokenCounter: counter,
    ...(settings.reserveOutput === undefined ? {} : { reserveOutput: settings.reserveOutput }),
    proxyTools: [],
  });
  const reduction = reduceToWindow(input.transcript, {
    room: Math.max(0, window - reserve.total),
    tokenCounter: counter,
  });
  const tokensBefore = reduction.tokensBefore + reserve.promptTokens;
  const tokensAfter = reduction.tokensAfter + reserve.promptTokens;
  headers.set('x-selfgc-tokens-before', String(tokensBefore));
  headers.set('x-selfgc-tokens-after', String(tokensAfter));
  headers.set('x-selfgc-output-reserve', String(reserve.outputTokens));
  // A huge text counted by its bytes: the figures are upper bounds, as governance says of its own.
  if (reduction.tokensBound) headers.set(TOKENS_BOUND_HEADER, 'true');
  Object.assign(trace.entry, {
    tokensBefore,
    tokensAfter,
    outputReserve: reserve.outputTokens,
    lane: reason,
    ...(reduction.tokensBound ? { tokensBound: true } : {}),
  });
  settings.metrics.count('selfgc_proxy_stateless_lane_total', { arm: trace.arm, reason });
  if (!reduction.changed) return undefined;
  addWarnings(
    headers,
    trace.entry,
    reduction.fits ? [STATELESS_REDUCTION] : [STATELESS_REDUCTION, OVER_WINDOW],
  );
  return dialect.writeTranscript(input.body, reduction.messages);
}
