/**
 * The options of `createGovernor`, checked before anything runs: a window of 0 or a share
 * that is not a number would otherwise govern silently wrong (plan at every call, or never).
 */
import { BadInputError } from '../errors.js';
import type { GovernorOptions } from './governor-types.js';

function refuse(field: string, expected: string, value: unknown): never {
  const shown = typeof value === 'string' ? `"${value}"` : String(value);
  throw new BadInputError(`createGovernor: ${field} must be ${expected}, got ${shown}`);
}

function checkInteger(value: unknown, field: string, minimum: number): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    refuse(field, minimum === 0 ? 'a non-negative integer' : 'a positive integer', value);
  }
}

/** A share of the window: `low < value ≤ high` (or `low ≤ value` when `lowIncluded`). */
function checkShare(value: unknown, field: string, lowIncluded: boolean, high: number): void {
  if (value === undefined) return;
  const inRange =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (lowIncluded ? value >= 0 : value > 0) &&
    value <= high;
  if (!inRange) refuse(field, `a number in ${lowIncluded ? '[' : '('}0, ${high}]`, value);
}

function checkStrings(value: unknown, field: string): void {
  if (value === undefined) return;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    refuse(field, 'an array of strings', value);
  }
}

/** Throws a `BadInputError` naming the first option that is not what `GovernorOptions` documents. */
export function validateGovernorOptions(options: GovernorOptions): void {
  if (options === null || typeof options !== 'object') refuse('options', 'an object', options);
  if (options.provider !== 'openai' && options.provider !== 'anthropic') {
    refuse('provider', '"openai" or "anthropic"', options.provider);
  }
  if (options.window === undefined) refuse('window', 'a positive integer (tokens)', options.window);
  checkInteger(options.window, 'window', 1);
  if (options.store === null || typeof options.store?.putPayloads !== 'function') {
    refuse('store', 'a SidecarStore', options.store);
  }
  if (options.planner !== undefined && typeof options.planner?.plan !== 'function') {
    refuse('planner', 'a Planner (with plan())', options.planner);
  }
  if (options.tokenCounter !== undefined && typeof options.tokenCounter?.count !== 'function') {
    refuse('tokenCounter', 'a TokenCounter (with count())', options.tokenCounter);
  }
  if (options.now !== undefined && typeof options.now !== 'function')
    refuse('now', 'a function', options.now);
  const triggers = options.triggers ?? {};
  checkShare(triggers.softPressure, 'triggers.softPressure', false, 1);
  checkShare(triggers.target, 'triggers.target', false, 1);
  checkShare(triggers.minBatch, 'triggers.minBatch', true, 1);
  checkInteger(triggers.periodicMessages, 'triggers.periodicMessages', 1);
  checkInteger(triggers.cooldownMessages, 'triggers.cooldownMessages', 0);
  checkInteger(triggers.breakerRuns, 'triggers.breakerRuns', 1);
  checkStrings(options.pins?.tools, 'pins.tools');
  checkStrings(options.pins?.paths, 'pins.paths');
  const { cache } = options;
  if (cache !== undefined && cache !== 'aware' && cache !== 'blind') {
    if (cache === null || typeof cache !== 'object')
      refuse('cache', '"aware", "blind" or a CachePricing', cache);
    for (const field of ['input', 'cacheWrite', 'cacheRead', 'ttlMs', 'output'] as const) {
      const value = cache[field];
      if (field === 'output' && value === undefined) continue;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        refuse(`cache.${field}`, 'a non-negative number', value);
      }
    }
  }
  const { commitPolicy } = options;
  if (commitPolicy !== undefined && commitPolicy !== 'cost' && commitPolicy !== 'paper') {
    refuse('commitPolicy', '"cost" or "paper"', commitPolicy);
  }
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/**
 * The arguments of `governor.project`, checked for their shape only: provider messages passed
 * as they are (the usual slip) are refused with the remedy instead of failing deep inside.
 */
export function validateProjectInput(sessionId: unknown, messages: unknown): void {
  if (typeof sessionId !== 'string' || sessionId === '')
    throw new BadInputError(
      `governor.project: the session id must be a non-empty string, got ${JSON.stringify(sessionId)}`,
    );
  if (!Array.isArray(messages))
    throw new BadInputError('governor.project: messages must be an array of transcript messages');
  messages.forEach((message: unknown, index) => {
    const shaped =
      message !== null &&
      typeof message === 'object' &&
      ROLES.has((message as { role?: unknown }).role as string) &&
      Array.isArray((message as { parts?: unknown }).parts);
    if (!shaped)
      throw new BadInputError(
        `governor.project: message ${index} is not a transcript message ({role, parts}); convert provider messages first (fromOpenAIChat, fromAnthropicMessages, fromModelMessages from self-gc/adapters)`,
        { messageIndex: index },
      );
  });
}
