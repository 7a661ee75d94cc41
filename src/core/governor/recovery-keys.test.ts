/**
 * A recovery key the model has seen names one content for the life of the session: across
 * rewinds, swapped conversations, restarts, and governors that share one store.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import type { SidecarStore } from '../store.js';
import { eagerGovernor } from '../testing/content-bound-governor.js';
import { conversation, fileBody, foreign, round, transcriptText } from '../testing/marked-conversation.js';
import { systemMessage, toolRound, userMessage } from '../testing/transcript-builders.js';
import type { Message } from '../transcript.js';
import type { ProjectResult } from './governor-types.js';

const governor = eagerGovernor;

type Governor = ReturnType<typeof governor>;

/** What every key offered so far recovered, and what went wrong: a key for two contents, a dead pointer. */
function keyBook() {
  const offered = new Map<string, string>();
  const problems: string[] = [];
  return {
    problems,
    offered,
    async record(gov: Governor, result: ProjectResult, at: string) {
      for (const key of Object.keys(result.recoverable)) {
        const payload = await gov.expand('s', key, result.recoverable);
        if (payload === undefined) problems.push(`${key} offered but not kept, ${at}`);
        else if (offered.has(key) && offered.get(key) !== payload)
          problems.push(`${key} names other content, ${at}`);
        else offered.set(key, payload);
      }
      for (const match of transcriptText(result.view).matchAll(/expand\("([^"]+)"\)/g))
        if (!(match[1]! in result.recoverable)) problems.push(`${match[1]} shown but not recoverable, ${at}`);
    },
  };
}

/** `history` governed call by call from `from` messages on. */
async function run(
  gov: Governor,
  history: readonly Message[],
  from: number,
  book: ReturnType<typeof keyBook>,
) {
  for (let end = from; end <= history.length; end += 2)
    await book.record(gov, await gov.project('s', history.slice(0, end)), `at ${end}`);
}

const alpha = conversation('alpha', 16);
/** Alpha up to the call of its ninth round, then another output of it and work of its own. */
function branch(marker: string): Message[] {
  const keep = alpha.slice(0, 2 + 8 * 2 + 1);
  const output = toolRound(
    'call_alpha_9',
    'read_file',
    { path: 'src/alpha/mod_9.py' },
    fileBody(marker, 9),
  )[1]!;
  return [...keep, output, ...Array.from({ length: 10 }, (_, index) => round(marker, 100 + index)).flat()];
}

describe('recovery keys', () => {
  for (const restart of [false, true]) {
    it(`never name two contents: two rewinds to one point, then a swapped conversation (${restart ? 'a fresh governor each time' : 'one governor'})`, async () => {
      const store = createMemoryStore();
      const book = keyBook();
      let gov = governor(store);
      await run(gov, alpha, 4, book);
      for (const history of [branch('bravo'), branch('charlie'), conversation('delta', 14), alpha]) {
        if (restart) gov = governor(store);
        await run(gov, history, 19, book);
      }
      expect([...book.offered.keys()].filter((key) => key.includes('~')).length).toBeGreaterThan(0);
      expect(book.problems).toEqual([]);
    });
  }

  it('never name two contents when a governor last saw another transcript than the one stored', async () => {
    const store = createMemoryStore();
    const book = keyBook();
    // One instance saw alpha and governs nothing; another governs a branch from message 10.
    const idle = governor(store, 1_000_000);
    await idle.project('s', alpha);
    const other = [
      ...alpha.slice(0, 10),
      ...Array.from({ length: 12 }, (_, index) => round('bravo', 100 + index)).flat(),
    ];
    await run(governor(store), other, 12, book);
    // The first comes back with alpha's first 24 messages and work of its own, now under pressure.
    const next = [
      ...alpha.slice(0, 24),
      ...Array.from({ length: 8 }, (_, index) => round('charlie', 100 + index)).flat(),
    ];
    const offeredBefore = book.offered.size;
    for (let end = 26; end <= next.length; end += 2)
      await book.record(
        idle,
        await idle.project('s', next.slice(0, end), { reservedTokens: 997_000 }),
        `at ${end}`,
      );
    expect(book.offered.size).toBeGreaterThan(offeredBefore);
    expect(book.problems).toEqual([]);
  });

  it('keep on a pure append what another governor committed', async () => {
    const store = createMemoryStore();
    const book = keyBook();
    await run(governor(store), alpha, 4, book);
    const idle = governor(store, 1_000_000);
    await idle.project('s', branch('bravo'));
    await book.record(idle, await idle.project('s', branch('bravo')), 'idle');
    await book.record(governor(store), await governor(store).project('s', branch('bravo')), 'other');
    const next = await idle.project('s', [...branch('bravo'), ...round('bravo', 300)]);
    await book.record(idle, next, 'append');
    expect(next.divergence).toBeUndefined();
    expect(book.problems).toEqual([]);
  });

  it('of a whole request folded name its work too, not only the request', async () => {
    const store = createMemoryStore();
    const book = keyBook();
    const history = (marker: string): Message[] => [
      systemMessage('You are a coding agent.'),
      userMessage('Review every module and report.'),
      ...round('alpha', 1),
      userMessage('Now review the second package.'),
      ...round('alpha', 2),
      ...round(marker, 3),
      ...round('alpha', 4),
      userMessage('Now the third.'),
      ...round('alpha', 5),
    ];
    for (const marker of ['alpha', 'bravo']) {
      const gov = governor(store);
      const messages = history(marker);
      if (marker === 'alpha') {
        const fold = { objectId: 'function:read_file:2', operation: 'fold' as const, reason: 'done' };
        await gov.applyAgentPlan('s', messages, { planner: 'agent', operations: [fold] });
      }
      const whole = { objectId: 'conversation:user:2', operation: 'fold' as const, reason: 'done' };
      const applied = await gov.applyAgentPlan('s', messages, { planner: 'agent', operations: [whole] });
      expect(applied.accepted.map((entry) => entry.objectId)).toContain('conversation:user:2');
      await book.record(gov, await gov.project('s', messages), marker);
    }
    expect(book.problems).toEqual([]);
  });
});

describe('recovery keys of a whole request', () => {
  const fold = (objectId: string) => ({ objectId, operation: 'fold' as const, reason: 'done' });

  it('never name two contents when the request is cut where keys are tagged from', async () => {
    const store = createMemoryStore();
    const book = keyBook();
    const gov = governor(store, 1_000_000);
    // 0 system, 1 request 1, 2-3 a round, 4 request 2, 5-10 three rounds, 11 request 3, 12-13 a round.
    const first: Message[] = [
      systemMessage('You are a coding agent.'),
      userMessage('Review every module and report.'),
      ...round('alpha', 1),
      userMessage('Now review the second package.'),
      ...round('alpha', 2),
      ...round('alpha', 3),
      ...round('alpha', 4),
      userMessage('Now the third.'),
      ...round('alpha', 5),
    ];
    await gov.applyAgentPlan('s', first, { planner: 'agent', operations: [fold('function:read_file:3')] });
    await gov.applyAgentPlan('s', first, { planner: 'agent', operations: [fold('conversation:user:2')] });
    await book.record(gov, await gov.project('s', first), 'first');
    // The user cuts in right after the third output (message 8): request 2 now ends at 9, where
    // the output's fold still holds.
    const second: Message[] = [
      ...first.slice(0, 9),
      userMessage('Stop; look at bravo instead.'),
      ...round('bravo', 6),
      userMessage('And now report.'),
      ...round('bravo', 7),
    ];
    const again = await gov.applyAgentPlan('s', second, {
      planner: 'agent',
      operations: [fold('conversation:user:2')],
    });
    expect(again.accepted.map((entry) => entry.key)).toEqual([
      expect.stringMatching(/^conversation:user:2~/),
    ]);
    await book.record(gov, await gov.project('s', second), 'second');
    expect(book.problems).toEqual([]);
  });

  it('keep what holds when the governor last saw a side request of the session', async () => {
    const edited = [...alpha.slice(0, 28), ...round('bravo', 40), ...round('bravo', 41)];
    const outcome = async (side: boolean) => {
      const gov = governor(createMemoryStore(), 1_000_000);
      const folds = ['function:read_file:2', 'function:read_file:5', 'function:read_file:14'].map(fold);
      await gov.applyAgentPlan('s', alpha, { planner: 'agent', operations: folds });
      if (side) await gov.project('s', [...alpha.slice(0, 3), ...round('zulu', 50)]);
      const result = await gov.project('s', edited);
      return { dropped: result.divergence?.dropped, recoverable: Object.keys(result.recoverable) };
    };
    const plain = await outcome(false);
    expect(plain.recoverable).toEqual(['function:read_file:2', 'function:read_file:5']);
    expect(await outcome(true)).toEqual(plain);
  });
});

describe('two governors committing at once on other histories', () => {
  it('take neither commit for the other: a view never shows the other history', async () => {
    const store = createMemoryStore();
    // Both governors read the state before either writes (two proxy instances).
    let armed = false;
    let reads = 0;
    let release!: () => void;
    const bothRead = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated: SidecarStore = Object.create(store);
    gated.readSession = async (id: string) => {
      const snapshot = await store.readSession(id);
      if (armed && reads < 2) {
        reads += 1;
        if (reads === 2) release();
        await bothRead;
      }
      return snapshot;
    };
    await run(governor(gated), alpha, 4, keyBook());
    const [first, second] = [governor(gated), governor(gated)];
    armed = true;
    const [bravo, charlie] = [branch('bravo'), branch('charlie')];
    const [seen, other] = await Promise.all([first.project('s', bravo), second.project('s', charlie)]);
    expect(reads).toBe(2);
    expect(foreign(transcriptText(seen.view), bravo)).toEqual([]);
    expect(foreign(transcriptText(other.view), charlie)).toEqual([]);
  });
});
