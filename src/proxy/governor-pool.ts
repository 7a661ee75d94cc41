/**
 * Governors on demand: one per (provider, window), all sharing one store and one configuration.
 * Pass `createGovernorPool(...)` as the proxy's `governor` to govern every model with its window.
 */
import { createGovernor } from '../core/governor/create-governor.js';
import type { Governor, GovernorOptions } from '../core/governor/governor-types.js';
import type { TokenCounter } from '../core/tokens.js';
import type { ProviderName } from './proxy-errors.js';

/** What the proxy knows when it needs a governor. */
export interface GovernorContext {
  provider: ProviderName;
  model: string;
  /** The window configured for this model (or its real window). */
  window: number;
}

export type GovernorFactory = (context: GovernorContext) => Governor;

/** The pool's options: a governor's, with the token counter given per provider if need be. */
export type GovernorPoolOptions = Omit<GovernorOptions, 'provider' | 'window' | 'tokenCounter'> & {
  tokenCounter?: TokenCounter | ((provider: ProviderName) => TokenCounter);
};

export function createGovernorPool(base: GovernorPoolOptions): GovernorFactory {
  const governors = new Map<string, Governor>();
  const { tokenCounter, ...rest } = base;
  return ({ provider, window }) => {
    const key = `${provider}:${window}`;
    let governor = governors.get(key);
    if (governor === undefined) {
      const counter = typeof tokenCounter === 'function' ? tokenCounter(provider) : tokenCounter;
      governor = createGovernor({ ...rest, ...(counter ? { tokenCounter: counter } : {}), provider, window });
      governors.set(key, governor);
    }
    return governor;
  };
}
