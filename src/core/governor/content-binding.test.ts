/**
 * State is bound to content: across calls, on histories that are edited, truncated, elided or
 * swapped for another conversation under the same session id, the view never holds content the
 * client did not send in this transcript, and recovery never returns any.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import { readSessionState } from '../session-state.js';
import { eagerGovernor } from '../testing/content-bound-governor.js';
import { conversation, foreign, round, transcriptText } from '../testing/marked-conversation.js';
import { assistantMessage, toolRound } from '../testing/transcript-builders.js';
import type { Message } from '../transcript.js';

const governor = eagerGovernor;

type Scenario =
  | { kind: 'edit'; round: number }
  | { kind: 'truncate'; keepRounds: number; newRounds: number }
  | { kind: 'elide'; dropRounds: number }
  | { kind: 'swap'; rounds: number };

/** The history the client sends next, derived from the first conversation `first`. */
function nextHistory(first: readonly Message[], rounds: number, scenario: Scenario): Message[] {
  switch (scenario.kind) {
    case 'edit': {
      // The client redacts an earlier output in place.
      const index = 2 + (scenario.round % rounds) * 2 + 1;
      return first.map((message, position) =>
        position === index
          ? toolRound(
              `call_alpha_${(scenario.round % rounds) + 1}`,
              'read_file',
              { path: 'x' },
              'redacted',
            )[1]!
          : message,
      );
    }
    case 'truncate': {
      const kept = first.slice(0, 2 + (scenario.keepRounds % rounds) * 2);
      const more = Array.from({ length: scenario.newRounds }, (_, offset) =>
        round('bravo', 100 + offset),
      ).flat();
      return [...kept, ...more];
    }
    case 'elide': {
      const dropped = 1 + (scenario.dropRounds % (rounds - 1));
      return [...first.slice(0, 2), ...first.slice(2 + dropped * 2)];
    }
    case 'swap':
      return conversation('bravo', scenario.rounds);
  }
}

const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.oneof(
  fc.record({ kind: fc.constant('edit' as const), round: fc.nat(40) }),
  fc.record({
    kind: fc.constant('truncate' as const),
    keepRounds: fc.nat(40),
    newRounds: fc.integer({ min: 0, max: 8 }),
  }),
  fc.record({ kind: fc.constant('elide' as const), dropRounds: fc.nat(40) }),
  fc.record({ kind: fc.constant('swap' as const), rounds: fc.integer({ min: 4, max: 24 }) }),
);

/** Every key a view offered for recovery in the session, with what it recovered then. */
type Offered = Map<string, string>;

/** Each key `result` offers recovers what it recovered whenever it was offered before. */
async function expectKeysKept(
  gov: ReturnType<typeof governor>,
  recoverable: Record<string, string>,
  offered: Offered,
): Promise<void> {
  for (const key of Object.keys(recoverable)) {
    const payload = await gov.expand('s', key, recoverable);
    expect(payload, key).toBeDefined();
    if (offered.has(key)) expect(payload, `${key} names other content than before`).toBe(offered.get(key));
    offered.set(key, payload!);
  }
}

async function expectOnlyOwnContent(
  gov: ReturnType<typeof governor>,
  messages: readonly Message[],
  offered: Offered,
): Promise<void> {
  const result = await gov.project('s', messages);
  const shown = transcriptText(result.view);
  expect(foreign(shown, messages)).toEqual([]);
  for (const key of Object.keys(result.recoverable)) {
    const payload = await gov.expand('s', key, result.recoverable);
    expect(payload, key).toBeDefined();
    expect(foreign(payload!, messages), key).toEqual([]);
  }
  await expectKeysKept(gov, result.recoverable, offered);
  // Every pointer the view shows is one this view can recover.
  for (const match of shown.matchAll(/expand\("([^"]+)"\)/g))
    expect(result.recoverable).toHaveProperty([match[1]!]);
  const hits = await gov.searchContext('s', 'secret', 20, result.recoverable);
  for (const hit of hits) expect(foreign(hit.snippet, messages)).toEqual([]);
}

describe('content-bound session state', () => {
  it('never shows or recovers content of another history under the same session id, nor offers a key the session offered for other content', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 10, max: 24 }),
        scenarioArbitrary,
        fc.boolean(),
        fc.integer({ min: 0, max: 4 }),
        async (rounds, scenario, restart, appended) => {
          const store = createMemoryStore();
          let gov = governor(store);
          const first = conversation('alpha', rounds);
          // The first history is governed call by call, so folds and span folds are committed.
          const offered: Offered = new Map();
          for (let end = 4; end <= first.length; end += 2)
            await expectKeysKept(gov, (await gov.project('s', first.slice(0, end))).recoverable, offered);
          expect((await store.listCommits('s')).length).toBeGreaterThan(0);
          // Another proxy instance, or the same one: only the store is shared.
          if (restart) gov = governor(store);
          const second = nextHistory(first, rounds, scenario);
          await expectOnlyOwnContent(gov, second, offered);
          // The second history goes on, governed call by call.
          let grown = second;
          for (let index = 0; index < appended; index += 1) {
            grown = [...grown, ...round('bravo', 200 + index)];
            await expectOnlyOwnContent(gov, grown, offered);
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);

  it('says where a divergence is and what stopped applying, once', async () => {
    const store = createMemoryStore();
    const gov = governor(store);
    const first = conversation('alpha', 16);
    for (let end = 4; end <= first.length; end += 2) await gov.project('s', first.slice(0, end));
    const folded = Object.keys((await readSessionState(store, 's')).state.objects);
    expect(folded.length).toBeGreaterThan(0);
    const swapped = conversation('bravo', 16);
    const result = await gov.project('s', swapped);
    expect(result.divergence?.at).toBe(2);
    expect(result.divergence?.dropped.sort()).toEqual(expect.arrayContaining(folded.sort()));
    expect(result.warnings.map((warning) => warning.code)).toContain('transcript-diverged');
    // The reconciled state was written back: the next call is a pure append again.
    const next = await gov.project('s', [...swapped, assistantMessage('Done.')]);
    expect(next.divergence).toBeUndefined();
    // Nothing the first conversation stored was overwritten: its payloads stay under their keys.
    const keys = (await store.listPayloads('s')).map((record) => record.objectId);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('keeps every commit on a pure append, and the view carries the messages as sent now', async () => {
    const store = createMemoryStore();
    const gov = governor(store);
    const first = conversation('alpha', 16);
    let result = await gov.project('s', first.slice(0, 4));
    for (let end = 6; end <= first.length; end += 2) {
      result = await gov.project('s', first.slice(0, end));
      expect(result.divergence).toBeUndefined();
    }
    const objects = (await readSessionState(store, 's')).state.objects;
    expect(Object.keys(objects).length).toBeGreaterThan(0);
    // The same content, with a cache breakpoint moved onto the last message: no divergence, and
    // the view carries the breakpoint where the client put it now.
    const resent = first.map((message, index) =>
      index === first.length - 1
        ? { ...message, providerData: { cache_control: { type: 'ephemeral' } } }
        : message,
    );
    const again = await gov.project('s', resent);
    expect(again.divergence).toBeUndefined();
    expect(again.view.at(-1)?.providerData).toEqual({ cache_control: { type: 'ephemeral' } });
    expect(Object.keys((await readSessionState(store, 's')).state.objects)).toEqual(Object.keys(objects));
  });
});
