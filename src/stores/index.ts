/**
 * Sidecar stores: the in-memory store and one way to pick any store by URL (drivers load on
 * demand). Each driver-backed store has its own entry, so an application loads only the driver
 * it uses: `self-gc/stores/sqlite`, `self-gc/stores/redis`, `self-gc/stores/postgres`.
 */
export { createMemoryStore } from './memory-store.js';
export { createStoreFromUrl } from './parse-store-url.js';
