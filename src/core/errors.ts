/**
 * One error base with a `code`, a few subclasses by kind of failure, and one table from code
 * to HTTP status and CLI exit code. Expected outcomes (a rejected operation, a planner that
 * proposed nothing) are returned values, not throws.
 */
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth.js';

export type ErrorCode =
  | 'bad-input'
  | 'not-found'
  | 'plan-rejected'
  | 'store-failure'
  | 'upstream-failure'
  | 'upstream-timeout'
  | 'payload-too-large'
  | 'upgrade-required'
  | 'internal';

/** HTTP status and process exit code for each error code: the only such table. */
export const ERROR_TABLE: Record<ErrorCode, { status: number; exitCode: number }> = {
  'bad-input': { status: 400, exitCode: 2 },
  'not-found': { status: 404, exitCode: 3 },
  'payload-too-large': { status: 413, exitCode: 2 },
  'plan-rejected': { status: 422, exitCode: 4 },
  'store-failure': { status: 503, exitCode: 5 },
  'upstream-failure': { status: 502, exitCode: 6 },
  'upstream-timeout': { status: 504, exitCode: 6 },
  // A transport the proxy does not carry (a WebSocket): the client is to use plain HTTP.
  'upgrade-required': { status: 426, exitCode: 2 },
  internal: { status: 500, exitCode: 1 },
};

export class SelfGcError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SelfGcError';
    this.code = code;
  }
}

/** Input that cannot be read or normalised: a malformed line, a bad message, a missing file. */
export class BadInputError extends SelfGcError {
  /** Index of the offending message, when the input is a transcript. */
  readonly messageIndex: number | undefined;
  constructor(message: string, options?: { messageIndex?: number; cause?: unknown }) {
    super('bad-input', message, options);
    this.name = 'BadInputError';
    this.messageIndex = options?.messageIndex;
  }
}

export class NotFoundError extends SelfGcError {
  constructor(message: string) {
    super('not-found', message);
    this.name = 'NotFoundError';
  }
}

/** A durable store failed to read or write. */
export class StoreError extends SelfGcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('store-failure', message, options);
    this.name = 'StoreError';
  }
}

/** A model endpoint failed, answered badly, or timed out. */
export class UpstreamError extends SelfGcError {
  readonly status: number | undefined;
  constructor(message: string, options?: { status?: number; timeout?: boolean; cause?: unknown }) {
    super(options?.timeout ? 'upstream-timeout' : 'upstream-failure', message, options);
    this.name = 'UpstreamError';
    this.status = options?.status;
  }
}

/** Normalise any thrown value into a SelfGcError (unknown values become `internal`). */
export function toSelfGcError(value: unknown): SelfGcError {
  if (value instanceof SelfGcError) return value;
  if (value instanceof Error) return new SelfGcError('internal', value.message, { cause: value });
  return new SelfGcError('internal', String(value));
}

/**
 * Parse JSON from an untrusted source, with an error that says where. Text nested deeper than
 * `maxDepth` (default `MAX_JSON_DEPTH`) is refused before parsing: every walk of the value
 * afterwards would overflow the stack.
 */
export function parseJson(textValue: string, where: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (exceedsJsonDepth(textValue, maxDepth)) {
    throw new BadInputError(`${where}: JSON nested deeper than ${maxDepth} levels`);
  }
  try {
    return JSON.parse(textValue);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new BadInputError(`${where}: invalid JSON (${reason})`, { cause: error });
  }
}
