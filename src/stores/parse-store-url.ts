import { BadInputError } from '../core/errors.js';
import type { SidecarStore } from '../core/store.js';

const SUPPORTED =
  'memory:, sqlite:<path>, sqlite::memory:, redis://…, rediss://…, postgres://… or postgresql://…';

/** Split our own query parameters off a server URL, leaving the rest for the driver. */
function takeParameters(url: string, names: readonly string[]): { url: string; values: Map<string, string> } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new BadInputError(`store URL is not a valid URL (expected ${SUPPORTED})`);
  }
  const values = new Map<string, string>();
  for (const name of names) {
    const value = parsed.searchParams.get(name);
    if (value === null) continue;
    values.set(name, value);
    parsed.searchParams.delete(name);
  }
  return { url: values.size === 0 ? url : parsed.toString(), values };
}

/** `sqlite:./x.db`, `sqlite:/abs/x.db`, `sqlite:///abs/x.db`, `sqlite::memory:` → the file path. */
function sqlitePath(rest: string): string {
  const path = rest.startsWith('//') ? rest.slice(2) : rest;
  if (path === '') throw new BadInputError('store URL "sqlite:" names no file (e.g. sqlite:./selfgc.db)');
  return path;
}

/** Import a store module whose driver is an optional peer dependency, with a clear error without it. */
async function loadDriver<T>(driver: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${driver}'`)) {
      throw new BadInputError(`this store needs the "${driver}" package: npm install ${driver}`, {
        cause: error,
      });
    }
    throw error;
  }
}

/** Options for the store a URL names, where that kind of store has them. */
export interface StoreUrlOptions {
  /** SQLite: where WAL checkpoints run (see `SqliteStoreOptions.checkpoints`). */
  sqliteCheckpoints?: 'inline' | 'background';
  /** Redis: session keys expire this long after their latest write (see `RedisStoreOptions.retainMs`). */
  retainMs?: number;
}

/** The URL's scheme, lower case, or undefined when it has none. */
function schemeOf(url: string): string | undefined {
  return /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
}

function unknownScheme(scheme: string | undefined): BadInputError {
  return new BadInputError(
    scheme === undefined
      ? `store URL has no scheme (expected ${SUPPORTED})`
      : `unknown store URL scheme "${scheme}:" (expected ${SUPPORTED})`,
  );
}

const KINDS: Readonly<Record<string, string>> = {
  memory: 'memory',
  sqlite: 'sqlite',
  redis: 'redis',
  rediss: 'redis',
  postgres: 'postgres',
  postgresql: 'postgres',
};

/** The store a URL names (`memory`, `sqlite`, `redis`, `postgres`: its `kind`), without opening it. */
export function storeKindOf(url: string): string {
  const scheme = schemeOf(url);
  const kind = scheme === undefined ? undefined : KINDS[scheme];
  if (kind === undefined) throw unknownScheme(scheme);
  return kind;
}

/**
 * Open a store from one URL, as given on the command line or in configuration:
 *
 * - `memory:` — in-process only;
 * - `sqlite:./path.db`, `sqlite:///abs/path.db`, `sqlite::memory:` — embedded;
 * - `redis://…`, `rediss://…` — optional `?prefix=` sets the key prefix;
 * - `postgres://…`, `postgresql://…` — optional `?schema=` and `?prefix=` (table prefix).
 *
 * Drivers load only when their scheme is used. An unknown scheme is a `BadInputError`; the
 * message never repeats the URL, which may hold a password.
 */
export async function createStoreFromUrl(url: string, options: StoreUrlOptions = {}): Promise<SidecarStore> {
  const scheme = schemeOf(url);
  switch (scheme) {
    case 'memory': {
      if (!['memory:', 'memory://'].includes(url.toLowerCase())) {
        throw new BadInputError('store URL "memory:" takes nothing after the scheme');
      }
      const { createMemoryStore } = await import('./memory-store.js');
      return createMemoryStore();
    }
    case 'sqlite': {
      const { createSqliteStore } = await import('./sqlite-store.js');
      return createSqliteStore({
        path: sqlitePath(url.slice('sqlite:'.length)),
        ...(options.sqliteCheckpoints === undefined ? {} : { checkpoints: options.sqliteCheckpoints }),
      });
    }
    case 'redis':
    case 'rediss': {
      const { url: driverUrl, values } = takeParameters(url, ['prefix']);
      const { createRedisStore } = await loadDriver('ioredis', () => import('./redis-store.js'));
      const keyPrefix = values.get('prefix');
      return createRedisStore({
        url: driverUrl,
        ...(keyPrefix === undefined ? {} : { keyPrefix }),
        ...(options.retainMs === undefined ? {} : { retainMs: options.retainMs }),
      });
    }
    case 'postgres':
    case 'postgresql': {
      const { url: driverUrl, values } = takeParameters(url, ['schema', 'prefix']);
      const { createPostgresStore } = await loadDriver('pg', () => import('./postgres-store.js'));
      const schema = values.get('schema');
      const tablePrefix = values.get('prefix');
      return createPostgresStore({
        connectionString: driverUrl,
        ...(schema === undefined ? {} : { schema }),
        ...(tablePrefix === undefined ? {} : { tablePrefix }),
      });
    }
    default:
      throw unknownScheme(scheme);
  }
}
