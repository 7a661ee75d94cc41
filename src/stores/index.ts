/**
 * Sidecar stores: the in-memory store and one way to pick any store by URL (drivers load on
 * demand). Each driver-backed store has its own entry, so an application loads only the driver
 * it uses: `self-gc/stores/sqlite`, `self-gc/stores/redis`, `self-gc/stores/postgres`.
 */
export {
  type BreakerState,
  type GuardedStore,
  guardStore,
  isGuardedStore,
  type StoreGuardOptions,
  type StoreHealth,
  type StoreOpener,
} from './guard-store.js';
export { createMemoryStore } from './memory-store.js';
export { openGuardedStore } from './open-guarded-store.js';
export { createStoreFromUrl, type StoreUrlOptions, storeKindOf } from './parse-store-url.js';
export { DEFAULT_STORE_TIMEOUT_MS } from './store-policy.js';
