/**
 * `selfgc sessions list|show|delete|purge --store URL`: the sessions a proxy's store holds, and
 * their deletion (one by one, or every session not written for a while).
 */
import { existsSync } from 'node:fs';
import { BadInputError, NotFoundError } from '../core/errors.js';
import type { SessionSummary, SidecarStore } from '../core/store.js';
import { createStoreFromUrl } from '../stores/parse-store-url.js';
import type { CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';
import { formatStoredSession, readStoredSession } from './stored-session.js';

export const SESSIONS_HELP = `Usage: selfgc sessions <list|show|delete|purge> --store URL [options]

The sessions of a proxy's store: the sidecar payloads (tool outputs, secrets included), commits
and state it keeps for each. The proxy names a session "<key hash>:<session id>": the hash of
the client's API key (or tenant), then the id from x-selfgc-session.

  list                    sessions, most recently written first: id, last write, version,
                          commits, payloads
  show ID                 one session: commits, object states, payload keys and sizes (never
                          the payloads); the same as selfgc inspect --store URL --session ID
  delete ID...            remove sessions entirely (payloads, commits, state)
  purge --older-than T    remove every session not written for T: 30m, 12h, 7d

  --store URL             sqlite:./selfgc.db (default), redis://..., postgres://...
  --key-hash H            only the sessions of one API key (or tenant): H is the first part of
                          the session id; with show and delete, ID is then the session id alone
  --limit N               list at most N sessions (default 1000)
  --json                  print JSON instead of a table (list, show)
`;

export interface SessionsOptions {
  action: 'list' | 'show' | 'delete' | 'purge';
  /** Session ids (show: one; delete: one or more). */
  ids: string[];
  store: string;
  keyHash?: string;
  olderThanMs?: number;
  limit?: number;
  json?: boolean;
  /** Clock for purge (default `Date.now`). */
  now?: () => number;
}

/** What every session of one key starts with. */
export function keyHashPrefix(keyHash: string): string {
  if (!/^[0-9a-f]{32}$/.test(keyHash)) {
    throw new BadInputError(
      `--key-hash: expected the 32 hex digits before the ":" of a session id, got "${keyHash}"`,
    );
  }
  return `${keyHash}:`;
}

/**
 * Open a store to read or delete what it holds. A SQLite file that is not there is named, not
 * created empty (a mistyped path would otherwise list nothing and say nothing).
 */
export async function openExistingStore(url: string): Promise<SidecarStore> {
  const path = /^sqlite:(?:\/\/)?(.+)$/i.exec(url)?.[1];
  if (path !== undefined && path !== ':memory:' && !existsSync(path)) {
    throw new NotFoundError(`--store: ${path} does not exist`);
  }
  return createStoreFromUrl(url);
}

function listTable(sessions: readonly SessionSummary[]): string {
  return formatTable([
    ['session', 'last written', 'version', 'commits', 'payloads'],
    ...sessions.map((session) => [
      session.sessionId,
      new Date(session.updatedAt).toISOString(),
      String(session.version),
      String(session.commits),
      String(session.payloads),
    ]),
  ]);
}

/** Every session of a prefix not written since `cutoff`, deleted one by one. */
async function purgePrefix(store: SidecarStore, prefix: string, cutoff: number): Promise<number> {
  const old = (await store.listSessions({ prefix, limit: Number.MAX_SAFE_INTEGER })).filter(
    (session) => session.updatedAt < cutoff,
  );
  for (const session of old) await store.deleteSession(session.sessionId);
  return old.length;
}

/** Every session not written since `cutoff`, a bounded batch at a time. */
async function purgeAll(store: SidecarStore, cutoff: number): Promise<number> {
  const batch = 500;
  let removed = 0;
  for (;;) {
    const expired = await store.expireBefore(cutoff, { limit: batch });
    removed += expired.length;
    if (expired.length < batch) return removed;
  }
}

export async function sessionsCommand(io: CliIo, options: SessionsOptions): Promise<number> {
  const prefix = options.keyHash === undefined ? '' : keyHashPrefix(options.keyHash);
  const storeIdOf = (id: string) => `${prefix}${id}`;
  const store = await openExistingStore(options.store);
  try {
    switch (options.action) {
      case 'list': {
        const sessions = await store.listSessions({
          prefix,
          ...(options.limit === undefined ? {} : { limit: options.limit }),
        });
        if (options.json) io.stdout(`${JSON.stringify(sessions, null, 2)}\n`);
        else if (sessions.length === 0) io.stderr(`no sessions in the ${store.kind} store\n`);
        else io.stdout(listTable(sessions));
        return 0;
      }
      case 'show': {
        const report = await readStoredSession(store, storeIdOf(options.ids[0]!));
        io.stdout(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatStoredSession(report));
        return 0;
      }
      case 'delete': {
        const ids = options.ids.map(storeIdOf);
        // All or none: a mistyped id deletes nothing. A session whose state no longer reads
        // (another schema version) can still be deleted: only its listing is asked for.
        for (const id of ids) {
          const listed = await store.listSessions({ prefix: id });
          if (!listed.some((session) => session.sessionId === id)) {
            throw new NotFoundError(`no session "${id}" in the ${store.kind} store (nothing deleted)`);
          }
        }
        for (const id of ids) await store.deleteSession(id);
        io.stderr(`deleted ${ids.length} session${ids.length === 1 ? '' : 's'}\n`);
        return 0;
      }
      case 'purge': {
        const cutoff = (options.now ?? Date.now)() - options.olderThanMs!;
        const removed =
          prefix === '' ? await purgeAll(store, cutoff) : await purgePrefix(store, prefix, cutoff);
        io.stderr(
          `removed ${removed} session${removed === 1 ? '' : 's'} not written since ${new Date(cutoff).toISOString()}\n`,
        );
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}
