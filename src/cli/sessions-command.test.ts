import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { longSession } from '../core/testing/long-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createSqliteStore } from '../stores/sqlite-store.js';
import { runCommand } from './run-main.js';
import type { StoredSessionReport } from './stored-session.js';
import { captureIo } from './testing/capture-io.js';

const KEY_HASH = 'a'.repeat(32);
const OTHER_HASH = 'b'.repeat(32);
const SECRET = 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI';

/** A store file holding governed sessions, as a proxy leaves it: `${keyHash}:${sessionId}`. */
async function governedStore(): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), 'selfgc-sessions-')), 'selfgc.db');
  const store = createSqliteStore({ path });
  const governor = createGovernor({
    provider: 'openai',
    window: 4000,
    store,
    tokenCounter: approximateTokenCounter,
    triggers: { milestones: false, minBatch: 0 },
  });
  const messages = longSession({ rounds: 24 });
  const first = messages[3]!;
  if (first.role === 'tool') {
    const part = first.parts[0]!;
    if (part.type === 'tool-result' && typeof part.content === 'string') part.content += `\n${SECRET}`;
  }
  for (const sessionId of [`${KEY_HASH}:agent-1`, `${KEY_HASH}:agent-2`, `${OTHER_HASH}:agent-1`]) {
    const result = await governor.project(sessionId, messages);
    expect(result.commits.length, sessionId).toBeGreaterThan(0);
  }
  await store.close();
  return `sqlite:${path}`;
}

describe('selfgc sessions and inspect --store', () => {
  it('lists, shows, deletes and purges the sessions of a store, scoped by key hash', async () => {
    const url = await governedStore();
    const listing = captureIo();
    expect(await runCommand(['sessions', 'list', '--store', url, '--json'], listing.io)).toBe(0);
    const all = JSON.parse(listing.out()) as Array<{ sessionId: string; commits: number; payloads: number }>;
    expect(all.map((session) => session.sessionId).sort()).toEqual([
      `${KEY_HASH}:agent-1`,
      `${KEY_HASH}:agent-2`,
      `${OTHER_HASH}:agent-1`,
    ]);
    expect(all.every((session) => session.commits > 0 && session.payloads > 0)).toBe(true);

    const scoped = captureIo();
    await runCommand(['sessions', 'list', '--store', url, '--key-hash', KEY_HASH], scoped.io);
    expect(scoped.out()).toMatch(/^session\s+last written\s+version\s+commits\s+payloads\n/);
    expect(scoped.out()).toContain(`${KEY_HASH}:agent-1`);
    expect(scoped.out()).not.toContain(OTHER_HASH);

    // show and inspect --store print the same report: commits, object states, payload keys and sizes.
    const shown = captureIo();
    await runCommand(
      ['sessions', 'show', 'agent-1', '--store', url, '--key-hash', KEY_HASH, '--json'],
      shown.io,
    );
    const inspected = captureIo();
    await runCommand(['inspect', '--store', url, '--session', `${KEY_HASH}:agent-1`, '--json'], inspected.io);
    expect(inspected.out()).toBe(shown.out());
    const report = JSON.parse(shown.out()) as StoredSessionReport;
    expect(report.session).toBe(`${KEY_HASH}:agent-1`);
    expect(report.commits[0]).toMatchObject({ sequence: 1, planner: expect.stringMatching(/^embedded/) });
    expect(report.objects.length).toBeGreaterThan(0);
    expect(
      report.objects.every((object) => report.commits.some((commit) => commit.commit === object.commit)),
    ).toBe(true);
    expect(report.payloads.every((payload) => payload.bytes > 0)).toBe(true);
    // Keys and sizes only: never a payload's content.
    expect(shown.out()).not.toContain(SECRET);
    const table = captureIo();
    await runCommand(['inspect', '--store', url, '--session', `${KEY_HASH}:agent-1`], table.io);
    expect(table.out()).toMatch(/^session a{32}:agent-1: version \d+, last written \S+, \d+ commits/);
    expect(table.out()).toContain('sidecar payloads');
    expect(table.out()).not.toContain(SECRET);

    // Delete is all or none.
    const missing = captureIo();
    await expect(
      runCommand(
        ['sessions', 'delete', 'agent-2', 'nope', '--store', url, '--key-hash', KEY_HASH],
        missing.io,
      ),
    ).rejects.toBeInstanceOf(NotFoundError);
    const deleting = captureIo();
    expect(
      await runCommand(
        ['sessions', 'delete', 'agent-2', '--store', url, '--key-hash', KEY_HASH],
        deleting.io,
      ),
    ).toBe(0);
    expect(deleting.err()).toBe('deleted 1 session\n');
    await expect(
      runCommand(['inspect', '--store', url, '--session', `${KEY_HASH}:agent-2`], captureIo().io),
    ).rejects.toThrow(/no session ".*agent-2" in the sqlite store/);

    // Purge: nothing is a day old; everything is older than a millisecond from now on.
    const purgeNone = captureIo();
    await runCommand(['sessions', 'purge', '--older-than', '1d', '--store', url], purgeNone.io);
    expect(purgeNone.err()).toMatch(/^removed 0 sessions not written since /);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const purgeScoped = captureIo();
    await runCommand(
      ['sessions', 'purge', '--older-than', '1ms', '--store', url, '--key-hash', OTHER_HASH],
      purgeScoped.io,
    );
    expect(purgeScoped.err()).toMatch(/^removed 1 session not written/);
    const left = captureIo();
    await runCommand(['sessions', 'list', '--store', url, '--json'], left.io);
    expect(
      (JSON.parse(left.out()) as Array<{ sessionId: string }>).map((session) => session.sessionId),
    ).toEqual([`${KEY_HASH}:agent-1`]);
    const purgeAll = captureIo();
    await runCommand(['sessions', 'purge', '--older-than', '1ms', '--store', url], purgeAll.io);
    expect(purgeAll.err()).toMatch(/^removed 1 session not written/);
  });

  it('refuses what it cannot do with one clear line, and never creates a store it was asked to read', async () => {
    const { io } = captureIo();
    const absent = join(mkdtempSync(join(tmpdir(), 'selfgc-sessions-')), 'absent.db');
    await expect(runCommand(['sessions', 'list', '--store', `sqlite:${absent}`], io)).rejects.toThrow(
      `--store: ${absent} does not exist`,
    );
    await expect(
      runCommand(['inspect', '--store', `sqlite:${absent}`, '--session', 'x'], io),
    ).rejects.toThrow('does not exist');
    await expect(runCommand(['inspect', '--store', 'memory:'], io)).rejects.toThrow(/needs --session/);
    await expect(
      runCommand(['sessions', 'list', '--store', 'memory:', '--key-hash', 'xyz'], io),
    ).rejects.toThrow(/--key-hash: expected the 32 hex digits/);
    await expect(runCommand(['sessions', 'purge', '--store', 'memory:'], io)).rejects.toThrow(/--older-than/);
    await expect(runCommand(['sessions', 'show', '--store', 'memory:'], io)).rejects.toThrow(
      /one session id/,
    );
    await expect(runCommand(['sessions', 'wipe', '--store', 'memory:'], io)).rejects.toThrow(
      /unknown action "wipe"/,
    );
    await expect(runCommand(['sessions', 'list', '--store', 'memory:', '--limit', '-3'], io)).rejects.toThrow(
      '--limit: expected a positive integer, got "-3"',
    );
  });

  it('refuses an option its action does not take: purge --limit would purge every old session', async () => {
    const url = await governedStore();
    const { io } = captureIo();
    for (const [argv, message] of [
      [['purge', '--older-than', '1ms', '--limit', '1'], 'sessions purge takes no --limit'],
      [['purge', '--older-than', '1ms', '--json'], 'sessions purge takes no --json'],
      [['list', '--older-than', '7d'], 'sessions list takes no --older-than'],
      [['show', `${KEY_HASH}:agent-1`, '--limit', '1'], 'sessions show takes no --limit'],
      [['delete', `${KEY_HASH}:agent-1`, '--json'], 'sessions delete takes no --json'],
    ] as const)
      await expect(runCommand(['sessions', ...argv, '--store', url], io)).rejects.toThrow(message);
    const listing = captureIo();
    expect(await runCommand(['sessions', 'list', '--store', url, '--json'], listing.io)).toBe(0);
    expect(JSON.parse(listing.out())).toHaveLength(3);
  });
});
