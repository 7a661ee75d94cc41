import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../../core/ledger.js';
import { projectView, type ViewItem } from '../../core/project-view.js';
import { type RehearseOptions, rehearsePlan } from '../../core/rehearse-plan.js';
import {
  assistantCalls,
  assistantMessage,
  longOutput,
  systemMessage,
  toolCall,
  toolRound,
  userMessage,
} from '../../core/testing/transcript-builders.js';
import { approximateTokenCounter } from '../../core/tokens.js';
import { type Message, messageText } from '../../core/transcript.js';
import { orphanedToolResults } from '../testing/eval-fixtures.js';
import {
  type AnchorVerdict,
  continuationAnchors,
  createAnchorLocator,
  judgeAnchors,
  type MissingSource,
  neededAnchors,
} from './anchor-judge.js';

const CACHE_SOURCE = 'def evict_entry(key):\n    raise KeyError(key)\nMAX_ENTRIES = 4096';

/** 0 system, 1 user, 2–3 read_file src/cache.py, 4–5 failing bash; the next step is the continuation. */
function cachePrefix(): Message[] {
  return [
    systemMessage('You are a coding agent.'),
    userMessage('Fix the failing test in tests/test_cache.py.'),
    ...toolRound('call_1', 'read_file', { file_path: 'src/cache.py' }, CACHE_SOURCE),
    ...toolRound(
      'call_2',
      'bash',
      { command: 'pytest tests/test_cache.py' },
      "FAILED tests/test_cache.py::test_evict - KeyError: 'stale_key'",
      { isError: true },
    ),
  ];
}

/** Quotes the read file (evict_entry, MAX_ENTRIES, 4096), both outputs (KeyError), and one new name. */
const CONTINUATION: Message[] = [
  assistantCalls(
    [toolCall('call_3', 'edit_file', { file_path: 'src/cache.py', old: 'raise KeyError(key)', new: 'pass' })],
    'evict_entry raises KeyError once MAX_ENTRIES reaches 4096; brand_new_helper will fix it',
  ),
];

function setup(prefix = cachePrefix()) {
  const ledger = indexTranscript(prefix, { tokenCounter: approximateTokenCounter });
  const prefixTexts = prefix.map(messageText);
  return { ledger, prefixTexts };
}

function fullView(ledger: Ledger): ViewItem[] {
  return ledger.messages.map((message, source) => ({ source, message, changed: false }));
}

/** Each missing anchor with where it last stood. */
function sourcesOf(verdict: AnchorVerdict): Record<string, MissingSource> {
  return Object.fromEntries(verdict.missing.map((anchor, index) => [anchor, verdict.missingFrom[index]!]));
}

const TOOL_ONE_STEP_BACK = { role: 'tool', stepsBack: 1, inLatestFold: false } as const;

function rehearsed(
  ledger: Ledger,
  operations: Array<[string, 'fold' | 'mask' | 'prune']>,
  options: RehearseOptions = {},
) {
  const { stateAfter } = rehearsePlan(
    ledger,
    {},
    {
      planner: 'test',
      operations: operations.map(([objectId, operation]) => ({ objectId, operation, reason: 'test' })),
    },
    options,
  );
  return { state: stateAfter, items: projectView(ledger, stateAfter).items };
}

describe('neededAnchors', () => {
  it('keeps the continuation anchors (assistant text and argument values) found in the prefix, with their holders', () => {
    const { prefixTexts } = setup();
    const needed = neededAnchors(prefixTexts, CONTINUATION);
    expect(needed.get('evict_entry')).toEqual([3]);
    expect(needed.get('MAX_ENTRIES')).toEqual([3]);
    expect(needed.get('4096')).toEqual([3]);
    expect(needed.get('KeyError')).toEqual([3, 5]);
    // An argument value: the call in message 2 holds it.
    expect(needed.get('src/cache.py')).toEqual([2]);
    // New in the continuation: nothing in the prefix to keep.
    expect(needed.has('brand_new_helper')).toBe(false);
    // An argument key is shape, not an anchor, although the prefix's own call spells it.
    expect(prefixTexts[2]).toContain('file_path');
    expect(needed.has('file_path')).toBe(false);
  });

  it('equals a brute-force scan of the continuation anchors over the prefix texts', () => {
    const { prefixTexts } = setup();
    const expected = new Map<string, number[]>();
    for (const anchor of continuationAnchors(CONTINUATION)) {
      const holders = prefixTexts.flatMap((textValue, index) => (textValue.includes(anchor) ? [index] : []));
      if (holders.length > 0) expected.set(anchor, holders);
    }
    expect(new Map(neededAnchors(prefixTexts, CONTINUATION))).toEqual(expected);
  });

  it('reads only assistant messages of the continuation', () => {
    const { prefixTexts } = setup();
    expect(neededAnchors(prefixTexts, [userMessage('evict_entry and MAX_ENTRIES, please')]).size).toBe(0);
    expect([...neededAnchors(prefixTexts, [assistantMessage('see evict_entry')]).keys()]).toEqual([
      'evict_entry',
    ]);
  });
});

describe('judgeAnchors', () => {
  it('is strict when every holder stays in the view unchanged', () => {
    const { ledger, prefixTexts } = setup();
    const verdict = judgeAnchors({
      ledger,
      prefixTexts,
      items: fullView(ledger),
      continuation: CONTINUATION,
    });
    expect(verdict).toMatchObject({
      missing: [],
      lost: [],
      lostFromFoldOrMask: [],
      strict: true,
      recoverable: true,
    });
    expect(new Set(verdict.needed)).toEqual(new Set(neededAnchors(prefixTexts, CONTINUATION).keys()));
  });

  it('reports anchors whose every holder left the view as missing and, without a sidecar, lost', () => {
    const { ledger, prefixTexts } = setup();
    const items = fullView(ledger).filter((item) => item.source !== 3);
    const verdict = judgeAnchors({ ledger, prefixTexts, items, continuation: CONTINUATION });
    expect(new Set(verdict.missing)).toEqual(new Set(['evict_entry', 'MAX_ENTRIES', '4096']));
    // KeyError is still shown by the test run in message 5.
    expect(verdict.missing).not.toContain('KeyError');
    expect(verdict.lost).toEqual(verdict.missing);
    expect(verdict.lostFromFoldOrMask).toEqual([]);
    expect(verdict).toMatchObject({ strict: false, recoverable: false });
    // The read's output (message 3, one assistant step before the call) left without an operation.
    expect(verdict.missingFrom).toEqual(
      verdict.missing.map(() => ({ ...TOOL_ONE_STEP_BACK, removedBy: 'removed' })),
    );
  });

  it('sees anchors inside the text of changed items, wherever they stand', () => {
    const { ledger, prefixTexts } = setup();
    const items = fullView(ledger).map((item) =>
      item.source === 3
        ? { ...item, changed: true, message: assistantMessage('kept: evict_entry, 4096') }
        : item,
    );
    items.push({ source: 5, changed: true, message: userMessage('note: MAX_ENTRIES') });
    const verdict = judgeAnchors({ ledger, prefixTexts, items, continuation: CONTINUATION });
    expect(verdict.missing).toEqual([]);
    expect(verdict.strict).toBe(true);
  });

  it('checks unchanged items by source index, changed ones by their text only', () => {
    const { ledger, prefixTexts } = setup();
    // The changed item stands for message 3 but no longer shows its anchors.
    const items = fullView(ledger).map((item) =>
      item.source === 3 ? { ...item, changed: true, message: assistantMessage('[cleared]') } : item,
    );
    const verdict = judgeAnchors({ ledger, prefixTexts, items, continuation: CONTINUATION });
    expect(new Set(verdict.missing)).toEqual(new Set(['evict_entry', 'MAX_ENTRIES', '4096']));
  });

  it('counts anchors of a folded payload as recoverable when the fold pointer is visible', () => {
    const { ledger, prefixTexts } = setup();
    // A fold that keeps no anchors: everything it held is missing but behind its pointer.
    const { state, items } = rehearsed(ledger, [['function:read_file:1', 'fold']], { foldAnchors: 0 });
    expect(items.find((item) => item.source === 3)?.changed).toBe(true);
    expect(messageText(items.find((item) => item.source === 3)!.message)).toContain(
      'expand("function:read_file:1")',
    );
    const verdict = judgeAnchors({ ledger, prefixTexts, items, state, continuation: CONTINUATION });
    expect(new Set(verdict.missing)).toEqual(new Set(['evict_entry', 'MAX_ENTRIES', '4096']));
    expect(verdict).toMatchObject({ lost: [], lostFromFoldOrMask: [], strict: false, recoverable: true });
    expect(sourcesOf(verdict).MAX_ENTRIES).toEqual({ ...TOOL_ONE_STEP_BACK, removedBy: 'folded' });
  });

  it('counts anchors of the work a span fold removed as recoverable through its keyed pointer', () => {
    const { ledger, prefixTexts } = setup();
    const { stateAfter } = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: [{ objectId: 'conversation:user:1', operation: 'fold', reason: 'test', spanEnd: 4 }],
      },
      { foldAnchors: 0 },
    );
    expect(stateAfter['conversation:user:1']).toMatchObject({ keepRequest: true, spanEnd: 4 });
    const items = projectView(ledger, stateAfter).items;
    // The request stays; the read (call and output) leaves behind a pointer.
    expect(items.map((item) => [item.source, item.changed])).toEqual([
      [0, false],
      [1, false],
      [1, true],
      [4, false],
      [5, false],
    ]);
    const verdict = judgeAnchors({
      ledger,
      prefixTexts,
      items,
      state: stateAfter,
      continuation: CONTINUATION,
    });
    expect(new Set(verdict.missing)).toEqual(new Set(['evict_entry', 'MAX_ENTRIES', '4096', 'src/cache.py']));
    expect(verdict).toMatchObject({ lost: [], strict: false, recoverable: true });
    // The output and the agent's call that named the path both went into the request's span fold.
    // That fold is the one of the latest work.
    expect(sourcesOf(verdict)).toEqual({
      evict_entry: { ...TOOL_ONE_STEP_BACK, removedBy: 'folded', inLatestFold: true },
      MAX_ENTRIES: { ...TOOL_ONE_STEP_BACK, removedBy: 'folded', inLatestFold: true },
      '4096': { ...TOOL_ONE_STEP_BACK, removedBy: 'folded', inLatestFold: true },
      'src/cache.py': { role: 'agent', stepsBack: 1, removedBy: 'folded', inLatestFold: true },
    });
  });

  it('tells misses in the fold of the latest work from misses in work left earlier', () => {
    // 0 system, 1 user, 2–3 read, 4–5 bash; 6 the agent's answer; 7 user, 8–9 lint, 10 answer; 11 user.
    const prefix = [
      ...cachePrefix(),
      assistantMessage('The cache test fails on eviction.'),
      userMessage('Run the linter first.'),
      ...toolRound(
        'call_9',
        'bash',
        { command: 'ruff check src' },
        'src/cache.py:3: lint_rule_E501 line too long',
      ),
      assistantMessage('One lint finding.'),
      userMessage('Fix both now.'),
    ];
    const { ledger, prefixTexts } = setup(prefix);
    const { stateAfter } = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: [
          { objectId: 'conversation:user:1', operation: 'fold', reason: 'test', spanEnd: 7 },
          { objectId: 'conversation:user:2', operation: 'fold', reason: 'test', spanEnd: 11 },
        ],
      },
      { foldAnchors: 0 },
    );
    expect(stateAfter['conversation:user:2']).toMatchObject({ spanEnd: 11 });
    const continuation = [assistantMessage('MAX_ENTRIES and lint_rule_E501 both need a change.')];
    const verdict = judgeAnchors({
      ledger,
      prefixTexts,
      items: projectView(ledger, stateAfter).items,
      state: stateAfter,
      continuation,
    });
    expect(sourcesOf(verdict)).toEqual({
      MAX_ENTRIES: { role: 'tool', stepsBack: 4, removedBy: 'folded', inLatestFold: false },
      lint_rule_E501: { role: 'tool', stepsBack: 1, removedBy: 'folded', inLatestFold: true },
    });
  });

  it('counts a fold whose pointer left the view as a broken promise (lostFromFoldOrMask)', () => {
    const { ledger, prefixTexts } = setup();
    const { state, items } = rehearsed(ledger, [['function:read_file:1', 'fold']], { foldAnchors: 0 });
    const withoutPointer = items.filter((item) => item.source !== 3);
    const verdict = judgeAnchors({
      ledger,
      prefixTexts,
      items: withoutPointer,
      state,
      continuation: CONTINUATION,
    });
    expect(new Set(verdict.lost)).toEqual(new Set(['evict_entry', 'MAX_ENTRIES', '4096']));
    expect(new Set(verdict.lostFromFoldOrMask)).toEqual(new Set(verdict.lost));
    expect(verdict.recoverable).toBe(false);
  });

  it('counts anchors hidden by a mask as recoverable through the mask marker', () => {
    const listing = longOutput('row', 40);
    const prefix = [
      systemMessage('You are a coding agent.'),
      userMessage('List the rows.'),
      ...toolRound('call_1', 'bash', { command: 'cat rows.txt' }, listing),
      assistantMessage('Listed.'),
      userMessage('Which row has the odd value?'),
    ];
    const { ledger, prefixTexts } = setup(prefix);
    const { state, items } = rehearsed(ledger, [['function:bash:1', 'mask']]);
    expect(state['function:bash:1']?.operation).toBe('mask');
    const continuation = [assistantMessage('Row 20 has value=133.')];
    expect(neededAnchors(prefixTexts, continuation).get('133')).toEqual([3]);
    const verdict = judgeAnchors({ ledger, prefixTexts, items, state, continuation });
    expect(verdict.missing).toEqual(['133']);
    expect(verdict).toMatchObject({ lost: [], strict: false, recoverable: true });
    expect(verdict.missingFrom).toEqual([{ ...TOOL_ONE_STEP_BACK, removedBy: 'masked' }]);
  });

  it('counts anchors of a pruned object without tombstone as lost, and not as a fold or mask loss', () => {
    const { ledger, prefixTexts } = setup();
    const { state, items } = rehearsed(ledger, [['function:read_file:1', 'prune']], { tombstones: false });
    const verdict = judgeAnchors({ ledger, prefixTexts, items, state, continuation: CONTINUATION });
    // The call leaves with its result, and with it the path only its arguments held.
    expect(orphanedToolResults(items)).toEqual([]);
    expect(new Set(verdict.lost)).toEqual(new Set(['evict_entry', 'MAX_ENTRIES', '4096', 'src/cache.py']));
    expect(verdict.lostFromFoldOrMask).toEqual([]);
    // The output was pruned; the agent step that called it left with it, without an operation of its own.
    expect(sourcesOf(verdict)).toMatchObject({
      '4096': { ...TOOL_ONE_STEP_BACK, removedBy: 'pruned' },
      'src/cache.py': { role: 'agent', stepsBack: 1, removedBy: 'removed' },
    });
  });

  // Regression (was a bug): a prune tombstone ("[pruned function:read_file:1: …]") matches the `${id}:` pointer
  // pattern of `recoverableTexts`, so anchors of pruned objects count as recoverable. DESIGN.md
  // promises pruned payloads to nobody; only fold and mask leave a recovery pointer.
  it('does not treat a prune tombstone as a recovery pointer', () => {
    const { ledger, prefixTexts } = setup();
    const { state, items } = rehearsed(ledger, [['function:read_file:1', 'prune']]);
    expect(messageText(items.find((item) => item.source === 3)!.message)).toContain(
      '[pruned function:read_file:1:',
    );
    const verdict = judgeAnchors({ ledger, prefixTexts, items, state, continuation: CONTINUATION });
    expect(verdict.missing.length).toBeGreaterThan(0);
    expect(verdict.recoverable).toBe(false);
  });

  it('uses a precomputed needed map instead of the continuation when given', () => {
    const { ledger, prefixTexts } = setup();
    const items = fullView(ledger).filter((item) => item.source !== 3);
    const verdict = judgeAnchors({
      ledger,
      prefixTexts,
      items,
      continuation: CONTINUATION,
      needed: new Map([['KeyError', [3, 5]]]),
    });
    expect(verdict).toMatchObject({ needed: ['KeyError'], missing: [], strict: true });
  });
});

describe('createAnchorLocator', () => {
  const brute = (texts: readonly string[], anchor: string, end: number) =>
    texts.slice(0, end).flatMap((textValue, index) => (textValue.includes(anchor) ? [index] : []));

  type Step = { kind: 'append'; text: string } | { kind: 'ask'; anchor: string; end: number };
  const alphabet = fc.constantFrom('a', 'b', 'c', 'ab', 'ba', ' ');
  const shortText = fc.array(alphabet, { maxLength: 8 }).map((pieces) => pieces.join(''));
  const step: fc.Arbitrary<Step> = fc.oneof(
    shortText.map((text): Step => ({ kind: 'append', text })),
    fc
      .tuple(
        fc
          .array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 3 })
          .map((pieces) => pieces.join('')),
        fc.nat(),
      )
      .map(([anchor, end]): Step => ({ kind: 'ask', anchor, end })),
  );

  it('gives the holders of a brute-force scan while the texts grow and ends move on', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.boolean(), (steps, growing) => {
        const texts: string[] = [];
        const locator = createAnchorLocator(texts);
        let lastEnd = 0;
        for (const current of steps) {
          if (current.kind === 'append') {
            texts.push(current.text);
            continue;
          }
          // Replay asks with growing ends; any end within the texts must work too.
          const end = growing
            ? Math.min(texts.length, lastEnd + (current.end % 3))
            : current.end % (texts.length + 1);
          lastEnd = Math.max(lastEnd, end);
          expect([...locator.holders(current.anchor, end)]).toEqual(brute(texts, current.anchor, end));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('finds holders appended after the first question about an anchor', () => {
    const texts = ['x'];
    const locator = createAnchorLocator(texts);
    expect(locator.holders('KeyError', 1)).toEqual([]);
    texts.push('KeyError: boom', 'fine', 'another KeyError');
    expect([...locator.holders('KeyError', 4)]).toEqual([1, 3]);
    expect([...locator.holders('KeyError', 2)]).toEqual([1]);
  });

  // Regression (was a bug): `holders` returns the locator's own array, which later scans extend in place,
  // so a `NeededAnchors` map kept from an earlier cut silently gains holders past that cut.
  it('keeps an answer unchanged when later questions scan further', () => {
    const texts = ['KeyError here'];
    const locator = createAnchorLocator(texts);
    const first = locator.holders('KeyError', 1);
    texts.push('KeyError again');
    locator.holders('KeyError', 2);
    expect([...first]).toEqual([0]);
  });
});
