import type { SidecarStore } from '../core/store.js';
import { type GuardedStore, guardStore, type StoreGuardOptions } from './guard-store.js';
import { createStoreFromUrl, type StoreUrlOptions, storeKindOf } from './parse-store-url.js';

/**
 * The store a URL names behind `guardStore`, opened now if it can be: a store that is down at
 * start-up leaves it `down` (and opened by the first call that finds it back) instead of
 * failing, the same for every kind of store. A URL or driver that can never work (an unknown
 * scheme, a missing package, a bad table prefix) is still a `BadInputError` here.
 */
export async function openGuardedStore(
  url: string,
  options: StoreUrlOptions & { guard?: StoreGuardOptions } = {},
): Promise<GuardedStore> {
  const { guard, ...urlOptions } = options;
  const kind = storeKindOf(url);
  const open = (): Promise<SidecarStore> => createStoreFromUrl(url, urlOptions);
  const store = guardStore({ kind, open }, guard);
  try {
    await store.probe();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}
