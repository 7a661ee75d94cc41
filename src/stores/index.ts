/** Sidecar stores: every implementation of `SidecarStore`, and one way to pick one by URL. */
export { createMemoryStore } from './memory-store.js';
export { createStoreFromUrl } from './parse-store-url.js';
export { createPostgresStore, type PostgresStoreOptions } from './postgres-store.js';
export { createRedisStore, type RedisStoreOptions } from './redis-store.js';
export { createSqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
