import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { indexTranscript } from '../core/ledger.js';
import { readSessionState } from '../core/session-state.js';
import type { SidecarStore } from '../core/store.js';
import { longSession } from '../core/testing/long-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createSqliteStore } from './sqlite-store.js';
import { createStateCache } from './state-cache.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-state-cache-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('createStateCache', () => {
  it('decodes a text once and hands every reader the same frozen state', () => {
    const cache = createStateCache();
    const text = JSON.stringify({ objects: { a: { replacement: 'x', anchors: ['p'] } }, sequence: 1 });
    const first = cache.decode('s', text) as { objects: { a: { anchors: string[] } } };
    expect(cache.decode('s', `${text}`)).toBe(first);
    expect(Object.isFrozen(first.objects.a.anchors)).toBe(true);
    expect(() => first.objects.a.anchors.push('q')).toThrow(TypeError);
    expect(cache.decode('s', text)).toEqual({
      objects: { a: { replacement: 'x', anchors: ['p'] } },
      sequence: 1,
    });
  });

  it('decodes again when the stored text changed, whatever the version', () => {
    const cache = createStateCache();
    const first = cache.decode('s', '{"step":1}');
    const second = cache.decode('s', '{"step":2}');
    expect(second).toEqual({ step: 2 });
    expect(cache.decode('s', '{"step":1}')).not.toBe(first);
    expect(cache.decode('other', '{"step":2}')).not.toBe(second);
  });

  it('keeps the most recently read sessions within its limit, and forgets on request', () => {
    const cache = createStateCache(2);
    const a = cache.decode('a', '{"n":1}');
    cache.decode('b', '{"n":2}');
    expect(cache.decode('a', '{"n":1}')).toBe(a);
    cache.decode('c', '{"n":3}');
    // `b` was the least recently read: decoded afresh; `a` still cached.
    expect(cache.decode('a', '{"n":1}')).toBe(a);
    const c = cache.decode('c', '{"n":3}');
    cache.forget('c');
    expect(cache.decode('c', '{"n":3}')).not.toBe(c);
  });

  it('refuses corrupt JSON with a StoreError, as a read without the cache does', () => {
    expect(() => createStateCache().decode('s', '{"step":')).toThrow(StoreError);
  });

  it('hands out a remembered snapshot until invalidated, decoding a written text once', () => {
    const cache = createStateCache();
    expect(cache.current('s')).toBeUndefined();
    cache.remember('s', 3, '{"step":3}');
    const known = cache.current('s');
    expect(known).toEqual({ version: 3, state: { step: 3 } });
    expect(cache.current('s')?.state).toBe(known?.state);
    // Read back from the store, the same text reuses the decoding.
    expect(cache.decode('s', '{"step":3}')).toBe(known?.state);
    cache.invalidate();
    expect(cache.current('s')).toBeUndefined();
    expect(cache.decode('s', '{"step":3}')).toBe(known?.state);
    cache.remember('s', 4, '{"step":4}');
    expect(cache.current('s')).toEqual({ version: 4, state: { step: 4 } });
    cache.forget('s');
    expect(cache.current('s')).toBeUndefined();
  });
});

describe('two proxy instances on one SQLite file', () => {
  const messages = longSession({ rounds: 30 });
  // Past soft pressure again after the first commit.
  const grown = longSession({ rounds: 50 });
  const window = Math.ceil(
    indexTranscript(messages, { tokenCounter: approximateTokenCounter }).totalTokens / 0.8,
  );
  const governorOver = (store: SidecarStore) =>
    createGovernor({
      provider: 'openai',
      window,
      store,
      tokenCounter: approximateTokenCounter,
      now: () => 1_767_225_600_000,
      triggers: { milestones: false, minBatch: 0 },
    });

  it('each governor sees the commits the other made after its own store cached the state', async () => {
    const path = join(directory, 'shared.db');
    const first = createSqliteStore({ path });
    const second = createSqliteStore({ path });
    try {
      const left = governorOver(first);
      const right = governorOver(second);
      const committed = await left.project('s', messages);
      expect(committed.commit).toBeDefined();
      // The right instance reads the left one's commit and makes none of its own.
      const seen = await right.project('s', messages);
      expect(seen.view).toEqual(committed.view);
      expect(seen.commit).toBeUndefined();
      // The left instance reads (and caches) the state once more, then the right one moves on.
      expect((await left.project('s', messages)).view).toEqual(committed.view);
      const stale = await readSessionState(first, 's');
      const moved = await right.project('s', grown);
      expect(moved.commit).toBeDefined();
      // The left instance's cached decoding is of an older version: it must read the new one.
      const current = await readSessionState(first, 's');
      expect(current.version).toBeGreaterThan(stale.version);
      expect(current).toEqual(await readSessionState(second, 's'));
      const after = await left.project('s', grown);
      expect(after.view).toEqual(moved.view);
      expect(after.commit).toBeUndefined();
      expect(after.warnings.map((warning) => warning.code)).not.toContain('commit-conflict');
      // A write against the stale version is refused by the store, cache or not.
      expect((await first.writeState('s', stale.state, stale.version)).status).toBe('conflict');
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('reads a state another connection rewrote under the same version number', async () => {
    const path = join(directory, 'rewritten.db');
    const store = createSqliteStore({ path });
    const raw = new Database(path);
    try {
      await store.writeState('s', { owner: 'first' }, 0);
      expect(await store.readSession('s')).toEqual({ version: 1, state: { owner: 'first' } });
      raw.prepare('UPDATE selfgc_sessions SET state = ? WHERE session_id = ?').run('{"owner":"second"}', 's');
      expect(await store.readSession('s')).toEqual({ version: 1, state: { owner: 'second' } });
      // Its own write is what it reads next, without another connection's help.
      await store.writeState('s', { owner: 'third' }, 1);
      expect(await store.readSession('s')).toEqual({ version: 2, state: { owner: 'third' } });
      raw.prepare('DELETE FROM selfgc_sessions WHERE session_id = ?').run('s');
      expect(await store.readSession('s')).toBeUndefined();
    } finally {
      raw.close();
      await store.close();
    }
  });

  it('reads a session deleted and written again by the other instance, though its versions start over', async () => {
    const path = join(directory, 'recreated.db');
    const first = createSqliteStore({ path });
    const second = createSqliteStore({ path });
    try {
      await first.writeState('s', { owner: 'old' }, 0);
      expect(await first.readSession('s')).toEqual({ version: 1, state: { owner: 'old' } });
      await second.deleteSession('s');
      await second.writeState('s', { owner: 'new' }, 0);
      expect(await first.readSession('s')).toEqual({ version: 1, state: { owner: 'new' } });
    } finally {
      await first.close();
      await second.close();
    }
  });
});
