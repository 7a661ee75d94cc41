/**
 * Governors on demand: one per (provider, window), all sharing one store and one configuration.
 * Pass `createGovernorPool(...)` as the proxy's `governor` to govern every model with its window.
 */
import { createGovernor } from '../core/governor/create-governor.js';
import type { Governor, GovernorOptions } from '../core/governor/governor-types.js';
import type { ProviderName } from './proxy-errors.js';

/** What the proxy knows when it needs a governor. */
export interface GovernorContext {
  provider: ProviderName;
  model: string;
  /** The window configured for this model (or its real window). */
  window: number;
}

export type GovernorFactory = (context: GovernorContext) => Governor;

export function createGovernorPool(base: Omit<GovernorOptions, 'provider' | 'window'>): GovernorFactory {
  const governors = new Map<string, Governor>();
  return ({ provider, window }) => {
    const key = `${provider}:${window}`;
    let governor = governors.get(key);
    if (governor === undefined) {
      governor = createGovernor({ ...base, provider, window });
      governors.set(key, governor);
    }
    return governor;
  };
}
