/**
 * The arguments of `listSessions` and `expireBefore`, checked once for every store.
 */
import { BadInputError } from '../core/errors.js';
import {
  DEFAULT_EXPIRE_LIMIT,
  DEFAULT_SESSION_LIST_LIMIT,
  type ListSessionsOptions,
  type SessionSummary,
} from '../core/store.js';

function positiveLimit(value: number | undefined, fallback: number, where: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new BadInputError(`${where}: limit must be a positive integer, got ${value}`);
  }
  return value;
}

export function readListOptions(options: ListSessionsOptions | undefined): { prefix: string; limit: number } {
  return {
    prefix: options?.prefix ?? '',
    limit: positiveLimit(options?.limit, DEFAULT_SESSION_LIST_LIMIT, 'listSessions'),
  };
}

export function readExpireOptions(cutoff: number, options: { limit?: number } | undefined): number {
  if (!Number.isFinite(cutoff))
    throw new BadInputError(`expireBefore: cutoff must be a number, got ${cutoff}`);
  return positiveLimit(options?.limit, DEFAULT_EXPIRE_LIMIT, 'expireBefore');
}

/** Most recently written first; ties by id, so every store lists in the same order. */
export function compareSummaries(left: SessionSummary, right: SessionSummary): number {
  return (
    right.updatedAt - left.updatedAt ||
    (left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0)
  );
}
