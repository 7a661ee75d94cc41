import { describe, expect, it } from 'vitest';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { createPinRule } from './governor/pins.js';
import { countMessageTokens, indexTranscript, type Ledger, type LedgerOptions } from './ledger.js';
import type { OperationKind, Plan, PlannedOperation, ViewState } from './operations.js';
import { projectView } from './project-view.js';
import { latestTurnStart, type RehearseOptions, rehearsePlan } from './rehearse-plan.js';
import { moduleListing, threeRequestSession } from './testing/sample-session.js';
import {
  assistantCalls,
  assistantMessage,
  toolCall,
  toolMessage,
  toolResult,
  toolRound,
  userMessage,
} from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';
import type { Message, ToolResultPart } from './transcript.js';

const ledgerOptions: LedgerOptions = { tokenCounter: approximateTokenCounter };

function operation(objectId: string, kind: OperationKind, reason = 'test'): PlannedOperation {
  return { objectId, operation: kind, reason };
}

function plan(...operations: PlannedOperation[]): Plan {
  return { planner: 'test', operations };
}

function session(messages: Message[] = threeRequestSession()): Ledger {
  return indexTranscript(messages, ledgerOptions);
}

function rehearse(
  ledger: Ledger,
  operations: PlannedOperation[],
  options?: RehearseOptions,
  state: ViewState = {},
) {
  return rehearsePlan(ledger, state, plan(...operations), options);
}

/** The tool-result part of a view message (the view message standing for transcript `source`). */
function viewResult(ledger: Ledger, state: ViewState, source: number): ToolResultPart {
  const item = projectView(ledger, state).items.find((entry) => entry.source === source);
  const part = item?.message.parts[0];
  if (part?.type !== 'tool-result') throw new Error(`no tool result at ${source}`);
  return part;
}

function contentOf(part: ToolResultPart): string {
  return typeof part.content === 'string' ? part.content : JSON.stringify(part.content);
}

describe('folds of outputs', () => {
  it('a listing of long names folds to at most half of itself: its index is bounded in tokens too', () => {
    const listing = Array.from(
      { length: 300 },
      (_, index) => `packages/core-${index}/src/evaluation/providers/pi-provider-aliases-${index}.ts`,
    ).join('\n');
    const messages = [
      userMessage('find the provider files'),
      ...toolRound('c1', 'bash', { command: 'rg --files packages' }, listing),
      assistantMessage('Found them.'),
      userMessage('now fix the first one'),
    ];
    const ledger = indexTranscript(messages, { tokenCounter: createTokenCounter('o200k_base') });
    const output = ledger.objects.find((object) => object.toolName === 'bash')!;
    const rehearsal = rehearse(ledger, [operation(output.id, 'fold')]);
    expect(rehearsal.accepted.map((entry) => entry.operation.objectId)).toEqual([output.id]);
    const fold = rehearsal.accepted[0]!;
    const foldTokens = ledger.options.tokenCounter.count(rehearsal.stateAfter[output.id]!.replacement);
    expect(foldTokens).toBeLessThanOrEqual(output.tokens / 2 + 60);
    expect(fold.tokensAfter).toBeLessThan(fold.tokensBefore);
    // Still an index: it names files of the listing.
    expect(rehearsal.stateAfter[output.id]!.replacement).toMatch(/pi-provider-aliases-\d+\.ts/);
  });
});

describe('latestTurnStart', () => {
  it('is the last assistant message, or the last user request when nothing answered it', () => {
    const messages = threeRequestSession();
    expect(latestTurnStart(session(messages))).toBe(18);
    expect(latestTurnStart(session(messages.slice(0, 18)))).toBe(17);
    expect(latestTurnStart(session([]))).toBe(0);
  });

  it('takes in the outputs before a request that came before any answer to them', () => {
    const calls = assistantCalls([toolCall('c1', 'bash', { command: 'pytest' })]);
    const result = toolMessage(toolResult('c1', 'bash', '1 failed: test_parse'));
    const start = [userMessage('Fix the parser.'), assistantMessage('Running the tests.'), calls, result];
    // A client's compaction prompt (or a message the user sent while the tool ran) right after
    // the result: the result has not reached the model yet, so the turn starts at its call.
    expect(latestTurnStart(session([...start, userMessage('Summarize the conversation so far.')]))).toBe(2);
    // So with instructions the client sends in between (developer or system messages).
    const system: Message = { role: 'system', parts: [{ type: 'text', text: 'Permissions: full access.' }] };
    expect(latestTurnStart(session([...start, system, userMessage('Summarize it.')]))).toBe(2);
    // Requests sent after another request (a client replaying its history) start a turn of
    // their own, as before.
    expect(latestTurnStart(session([...start, userMessage('also this'), userMessage('and that')]))).toBe(5);
    // Once the model answered the outputs, a new request starts a turn of its own.
    const answered = [...start, assistantMessage('One test fails.'), userMessage('Fix it.')];
    expect(latestTurnStart(session(answered))).toBe(5);
  });
});

describe('fold', () => {
  it('keeps the key anchors, the status and a recovery pointer naming the id', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('function:bash:2', 'fold')], { foldAnchors: 12 });
    expect(rehearsal.rejected).toEqual([]);
    const replacement = rehearsal.accepted[0]?.state?.replacement ?? '';
    expect(replacement).toMatch(
      /^\[folded function:bash:2: bash command=pytest tests\/test_parser\.py → error, \d+ tokens\]/,
    );
    for (const anchor of ['ValueError', 'parse_line', 'test_parser.py::test_symbols']) {
      expect(replacement).toContain(anchor);
    }
    // The pinned request names it, and stays in every view: the index does not repeat it.
    expect(replacement).not.toContain('src/parser.py');
    expect(replacement).toContain('expand("function:bash:2")');
    expect(contentOf(viewResult(ledger, rehearsal.stateAfter, 5))).toBe(replacement);
  });

  it('by default indexes only the anchors the user or agent has not already written', () => {
    const ledger = session();
    const replacement =
      rehearse(ledger, [operation('function:bash:2', 'fold')]).accepted[0]?.state?.replacement ?? '';
    const line = replacement.split('\n').find((text) => text.startsWith('anchors: ')) ?? '';
    // Its names first, apart by spaces; then its entries with blanks, apart by semicolons.
    expect(line).toBe('anchors: test_parser.py::test_symbols; ValueError(f"bad token {line!r}")');
    const [names = '', ...phrases] = line.slice('anchors: '.length).split('; ');
    const listed = [...names.split(' '), ...phrases];
    expect(ledger.spokenAnchors.size).toBeGreaterThan(0);
    expect(ledger.spokenAnchors.has('test_parser.py')).toBe(true);
    for (const value of listed) expect(ledger.spokenAnchors.has(value)).toBe(false);
    expect(replacement).toContain('expand("function:bash:2")');
  });

  it('puts the planner summary on its own line', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [
      {
        ...operation('function:read_file:1', 'fold'),
        summary: 'the parser: parse_line raises on symbols\nsecond',
      },
    ]);
    const lines = (rehearsal.accepted[0]?.state?.replacement ?? '').split('\n');
    expect(lines[1]).toBe('the parser: parse_line raises on symbols second');
    expect(lines.at(-1)).toBe('(exact output kept; expand("function:read_file:1") recovers it)');
  });

  it('keeps at most `foldAnchors` anchors', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('function:bash:5', 'fold')], { foldAnchors: 3 });
    const anchorLine = (rehearsal.accepted[0]?.state?.replacement ?? '')
      .split('\n')
      .find((line) => line.startsWith('anchors:'));
    // Names are listed apart by a space.
    expect(anchorLine?.replace('anchors: ', '').split(' ')).toEqual([
      'src/modules/m0.py',
      'src/modules/m1.py',
      'src/modules/m2.py',
    ]);
  });

  it('replaces a whole conversation span with one user message', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('conversation:user:2', 'fold')]);
    const replacement = rehearsal.accepted[0]?.state?.replacement ?? '';
    expect(replacement).toContain(
      '[folded conversation:user:2: user asked "Now list the modules under src and summarise them."; 6 messages followed]',
    );
    expect(replacement).toContain('expand("conversation:user:2")');
    const view = projectView(ledger, rehearsal.stateAfter);
    const sources = view.items.map((item) => item.source);
    expect(sources).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 17, 18, 19]);
    const folded = view.items.find((item) => item.source === 11);
    expect(folded?.message).toEqual({ role: 'user', parts: [{ type: 'text', text: replacement }] });
  });
});

describe('mask', () => {
  it('keeps head and tail lines and a marker with the hidden count and the pointer', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('function:bash:5', 'mask')]);
    const replacement = rehearsal.accepted[0]?.state?.replacement ?? '';
    const lines = replacement.split('\n');
    const original = moduleListing(60).split('\n');
    expect(lines.slice(0, 8)).toEqual(original.slice(0, 8));
    expect(lines.slice(-6)).toEqual(original.slice(-6));
    expect(lines[8]).toMatch(
      /^\[… 46 of 60 lines masked \(function:bash:5, \d+ tokens in full\); expand\("function:bash:5"\) recovers them …\]$/,
    );
    expect(lines).toHaveLength(15);
    expect(rehearsal.accepted[0]?.state?.operation).toBe('mask');
  });

  it('keeps structure lines of the middle', () => {
    const output = [
      ...Array.from({ length: 10 }, (_, index) => `header ${index}`),
      'def important_function():',
      ...Array.from({ length: 10 }, (_, index) => `    body ${index}`),
      'class ImportantClass:',
      ...Array.from({ length: 10 }, (_, index) => `tail ${index}`),
    ].join('\n');
    const ledger = session([
      userMessage('a'),
      userMessage('b'),
      ...toolRound('c', 'read_file', { path: 'x.py' }, output),
      assistantMessage('done'),
    ]);
    const rehearsal = rehearse(ledger, [operation('function:read_file:1', 'mask')]);
    const replacement = rehearsal.accepted[0]?.state?.replacement ?? '';
    expect(replacement).toContain('def important_function():');
    expect(replacement).toContain('class ImportantClass:');
    // 32 lines: 8 head, 6 tail, 18 middle of which 2 structure lines stay visible.
    expect(replacement).toContain('[… 16 of 32 lines masked');
  });

  it('refuses short outputs, stack traces, diffs, sparse tables and conversations', () => {
    const trace = [
      'Traceback (most recent call last):',
      ...Array.from({ length: 30 }, (_, index) => `  File "m${index}.py", line ${index}`),
      'KeyError: 1',
    ].join('\n');
    const diff = [
      'diff --git a/x.py b/x.py',
      '@@ -1,30 +1,30 @@',
      ...Array.from({ length: 30 }, (_, index) => `-old ${index}\n+new ${index}`),
    ].join('\n');
    const table = Array.from({ length: 30 }, (_, index) => `| ${index} | name${index} | value |`).join('\n');
    const jsTrace = [
      'Error: boom',
      ...Array.from({ length: 30 }, (_, index) => `    at fn${index} (src/f${index}.js:${index + 1}:7)`),
    ].join('\n');
    const messages = [
      userMessage('a'),
      userMessage('b'),
      ...toolRound('c1', 'bash', { command: 'short' }, 'one\ntwo\nthree'),
      ...toolRound('c2', 'bash', { command: 'trace' }, trace),
      ...toolRound('c3', 'bash', { command: 'diff' }, diff),
      ...toolRound('c4', 'bash', { command: 'table' }, table),
      ...toolRound('c5', 'bash', { command: 'node' }, jsTrace),
      assistantMessage('done'),
      userMessage('next'),
      assistantMessage('ok'),
    ];
    const ledger = session(messages);
    const rehearsal = rehearse(
      ledger,
      [1, 2, 3, 4, 5]
        .map((index) => operation(`function:bash:${index}`, 'mask'))
        .concat(operation('conversation:user:2', 'mask')),
    );
    expect(rehearsal.accepted).toEqual([]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      ['function:bash:1', 'not-maskable'],
      ['function:bash:2', 'not-maskable'],
      ['function:bash:3', 'not-maskable'],
      ['function:bash:4', 'not-maskable'],
      ['function:bash:5', 'not-maskable'],
      ['conversation:user:2', 'not-applicable'],
    ]);
  });
});

describe('prune', () => {
  it('leaves a one-line tombstone by default, keeping the call', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('function:bash:2', 'prune')]);
    const replacement = rehearsal.accepted[0]?.state?.replacement ?? '';
    expect(replacement).toMatch(
      /^\[pruned function:bash:2: bash command=pytest tests\/test_parser\.py, failed, \d+ tokens\]$/,
    );
    const view = projectView(ledger, rehearsal.stateAfter);
    expect(view.items.find((item) => item.source === 4)?.message).toBe(ledger.messages[4]);
    expect(contentOf(viewResult(ledger, rehearsal.stateAfter, 5))).toBe(replacement);
  });

  it('without tombstones removes the call and its result together', () => {
    const ledger = session();
    const rehearsal = rehearse(
      ledger,
      [operation('function:bash:2', 'prune'), operation('function:edit_file:3', 'prune')],
      {
        tombstones: false,
      },
    );
    const view = projectView(ledger, rehearsal.stateAfter);
    // 4 (a call alone) and 5 (its result) leave; 6 keeps its text but loses its call; 7 leaves.
    expect(view.items.map((item) => item.source)).toEqual([
      0, 1, 2, 3, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
    ]);
    const six = view.items.find((item) => item.source === 6);
    expect(six?.message.parts).toEqual([ledger.messages[6]?.parts[0]]);
    expect(six?.changed).toBe(true);
    const ids = view.items.flatMap((item) =>
      item.message.parts.flatMap((part) =>
        part.type === 'tool-call' ? [part.id] : part.type === 'tool-result' ? [part.callId] : [],
      ),
    );
    expect(ids).not.toContain('call_2');
    expect(ids).not.toContain('call_3');
  });

  it('without tombstones keeps the sibling call and result of a parallel call', () => {
    const messages = [
      userMessage('start'),
      userMessage('read both'),
      assistantCalls([
        toolCall('a', 'read_file', { path: 'a.py' }),
        toolCall('b', 'read_file', { path: 'b.py' }),
      ]),
      toolMessage(toolResult('a', 'read_file', 'print("a")'), toolResult('b', 'read_file', 'print("b")')),
      assistantMessage('read'),
      userMessage('next'),
      assistantMessage('ok'),
    ];
    const ledger = session(messages);
    const rehearsal = rehearse(ledger, [operation('function:read_file:1', 'prune')], { tombstones: false });
    const view = projectView(ledger, rehearsal.stateAfter);
    const call = view.items.find((item) => item.source === 2)?.message;
    const results = view.items.find((item) => item.source === 3)?.message;
    expect(call?.parts.map((part) => (part.type === 'tool-call' ? part.id : part.type))).toEqual(['b']);
    expect(results?.parts.map((part) => (part.type === 'tool-result' ? part.callId : part.type))).toEqual([
      'b',
    ]);
  });

  it('without tombstones drops an assistant message left with reasoning only', () => {
    const messages: Message[] = [
      userMessage('start'),
      userMessage('check'),
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', text: 'I should run ls', signature: 'sig' },
          toolCall('c', 'bash', { command: 'ls' }),
        ],
      },
      toolMessage(toolResult('c', 'bash', 'a b c')),
      assistantMessage('listed'),
      userMessage('next'),
      assistantMessage('ok'),
    ];
    const ledger = session(messages);
    const rehearsal = rehearse(ledger, [operation('function:bash:1', 'prune')], { tombstones: false });
    expect(projectView(ledger, rehearsal.stateAfter).items.map((item) => item.source)).toEqual([
      0, 1, 4, 5, 6,
    ]);
  });

  it('of a conversation without tombstones removes its whole span', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('conversation:user:2', 'prune')], { tombstones: false });
    expect(projectView(ledger, rehearsal.stateAfter).items.map((item) => item.source)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 18, 19,
    ]);
  });

  it('of a conversation with a tombstone quotes the request and names its work', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('conversation:user:2', 'prune')]);
    const replacement = rehearsal.accepted[0]?.state?.replacement ?? '';
    expect(replacement).toMatch(
      /^\[pruned conversation:user:2: "Now list the modules under src and summarise them\."; its work named .*src\/modules\/m0\.py.*\]$/,
    );
    // Measured as rendered: the tombstone's entries are counted in the view.
    expect(rehearsal.accepted[0]?.state?.tokens).toBe(ledger.options.tokenCounter.count(replacement));
  });

  it('with bare tombstones quotes the request alone; pruned again, only a shorter tombstone is taken', () => {
    const ledger = session();
    const named = rehearse(ledger, [operation('conversation:user:2', 'prune')]);
    const bare = rehearse(ledger, [operation('conversation:user:2', 'prune')], { namedTombstones: false });
    expect(bare.accepted[0]?.state?.replacement).toBe(
      '[pruned conversation:user:2: "Now list the modules under src and summarise them."]',
    );
    expect(bare.tokensAfter).toBeLessThan(named.tokensAfter);
    // A committed named tombstone becomes bare when pruned again without names ...
    const again = rehearsePlan(ledger, named.stateAfter, plan(operation('conversation:user:2', 'prune')), {
      namedTombstones: false,
    });
    expect(again.accepted.map((entry) => entry.operation.objectId)).toEqual(['conversation:user:2']);
    expect(again.stateAfter['conversation:user:2']?.replacement).toBe(
      bare.stateAfter['conversation:user:2']?.replacement,
    );
    expect(again.tokensAfter).toBe(bare.tokensAfter);
    // ... while pruning it again as it is, or with names over a bare one, changes nothing.
    for (const [state, options] of [
      [named.stateAfter, {}],
      [bare.stateAfter, {}],
    ] as const) {
      const same = rehearsePlan(ledger, state, plan(operation('conversation:user:2', 'prune')), options);
      expect(same.accepted).toEqual([]);
      expect(same.rejected.map((entry) => entry.reason)).toEqual(['no-op']);
    }
  });
});

describe('rejections', () => {
  it('refuses unknown ids, pinned objects and the latest turn', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [
      operation('function:bash:99', 'fold'),
      operation('system:1', 'fold'),
      operation('conversation:user:1', 'prune'),
      operation('function:read_file:7', 'fold'),
      operation('conversation:user:3', 'fold'),
    ]);
    expect(rehearsal.accepted).toEqual([]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      ['function:bash:99', 'unknown-object'],
      ['system:1', 'pinned'],
      ['conversation:user:1', 'pinned'],
      ['function:read_file:7', 'latest-turn'],
      ['conversation:user:3', 'latest-turn'],
    ]);
    expect(rehearsal.stateAfter).toEqual({});
    expect(rehearsal.tokensAfter).toBe(rehearsal.tokensBefore);
    expect(rehearsal.earliestEdit).toBeUndefined();
  });

  it('refuses to fold or prune a conversation that holds a pinned object, but may expand it', () => {
    const messages = threeRequestSession();
    // conversation:user:2 reads a rules file.
    messages.splice(
      14,
      2,
      ...toolRound('call_7', 'read_file', { path: 'AGENTS.md' }, 'Always run the tests.'),
    );
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    expect(ledger.get('skill:read_file:6')?.pinReason).toBe('rules file');
    const rehearsal = rehearse(ledger, [
      operation('conversation:user:2', 'fold'),
      operation('function:bash:5', 'mask'),
    ]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason, entry.detail])).toEqual(
      [['conversation:user:2', 'pinned', 'conversation:user:2 holds pinned skill:read_file:6 (rules file)']],
    );
    // The output next to it is still fair game.
    expect(rehearsal.accepted.map((entry) => entry.operation.objectId)).toEqual(['function:bash:5']);
    expect(rehearse(ledger, [operation('conversation:user:2', 'prune')]).accepted).toEqual([]);
  });

  it('refuses a conversation that is still open', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [operation('conversation:user:3', 'fold')], {
      protectFrom: ledger.messages.length,
    });
    expect(rehearsal.rejected.map((entry) => entry.reason)).toEqual(['open-conversation']);
  });

  it('never edits a system prompt, even an unpinned one', () => {
    const ledger = indexTranscript(threeRequestSession(), {
      tokenCounter: approximateTokenCounter,
      pin: () => undefined,
    });
    const rehearsal = rehearse(ledger, [
      operation('system:1', 'fold'),
      operation('conversation:user:1', 'fold'),
    ]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      ['system:1', 'not-applicable'],
    ]);
    expect(rehearsal.accepted.map((entry) => entry.operation.objectId)).toEqual(['conversation:user:1']);
  });

  it('keeps the strongest of duplicate operations on one object', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [
      operation('function:bash:5', 'mask'),
      operation('function:bash:5', 'prune'),
      operation('function:bash:5', 'fold'),
      operation('function:read_file:1', 'fold', 'first'),
      operation('function:read_file:1', 'fold', 'second'),
    ]);
    expect(
      rehearsal.accepted.map((entry) => [
        entry.operation.objectId,
        entry.operation.operation,
        entry.operation.reason,
      ]),
    ).toEqual([
      ['function:bash:5', 'prune', 'test'],
      ['function:read_file:1', 'fold', 'first'],
    ]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.operation, entry.reason])).toEqual([
      ['mask', 'duplicate'],
      ['fold', 'duplicate'],
      ['fold', 'duplicate'],
    ]);
  });

  it('refuses operations inside a conversation the plan folds or prunes', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [
      operation('function:bash:5', 'mask'),
      operation('conversation:user:2', 'fold'),
      operation('function:read_file:6', 'prune'),
      operation('function:bash:2', 'fold'),
    ]);
    expect(rehearsal.accepted.map((entry) => entry.operation.objectId)).toEqual([
      'conversation:user:2',
      'function:bash:2',
    ]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      ['function:bash:5', 'covered'],
      ['function:read_file:6', 'covered'],
    ]);
  });

  it('does not treat a refused conversation operation as covering its outputs', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [
      operation('conversation:user:1', 'fold'),
      operation('function:bash:2', 'fold'),
    ]);
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      ['conversation:user:1', 'pinned'],
    ]);
    expect(rehearsal.accepted.map((entry) => entry.operation.objectId)).toEqual(['function:bash:2']);
  });

  it('treats keep and repeated operations as no-ops', () => {
    const ledger = session();
    const folded = rehearse(ledger, [
      operation('function:bash:5', 'fold'),
      operation('function:bash:2', 'prune'),
    ]).stateAfter;
    const rehearsal = rehearse(
      ledger,
      [
        operation('function:read_file:1', 'keep'),
        operation('function:bash:5', 'fold'),
        operation('function:bash:2', 'prune'),
        operation('function:edit_file:3', 'expand'),
      ],
      {},
      folded,
    );
    expect(rehearsal.accepted).toEqual([]);
    expect(rehearsal.rejected.map((entry) => entry.reason)).toEqual(['no-op', 'no-op', 'no-op', 'no-op']);
  });

  it('never changes the state it was given', () => {
    const ledger = session();
    const state: ViewState = Object.freeze({
      ...rehearse(ledger, [operation('function:bash:5', 'fold')]).stateAfter,
    });
    const copy = structuredClone(state);
    const rehearsal = rehearse(
      ledger,
      [operation('function:bash:5', 'expand'), operation('function:bash:2', 'prune')],
      {},
      state,
    );
    expect(state).toEqual(copy);
    expect(rehearsal.stateBefore).toBe(state);
    expect(Object.keys(rehearsal.stateAfter)).toEqual(['function:bash:2']);
  });
});

describe('expand', () => {
  it('undoes a fold or a mask: the view is the transcript again', () => {
    const ledger = session();
    const original = projectView(ledger, {});
    const removed = rehearse(ledger, [
      operation('function:bash:5', 'mask'),
      operation('function:bash:2', 'fold'),
      operation('conversation:user:2', 'fold'),
    ]);
    // bash:5 is inside conversation:user:2: covered, so mask it in a second step.
    const masked = rehearse(ledger, [operation('function:bash:5', 'mask')], {}, removed.stateAfter);
    expect(Object.keys(masked.stateAfter).sort()).toEqual([
      'conversation:user:2',
      'function:bash:2',
      'function:bash:5',
    ]);
    const expanded = rehearse(
      ledger,
      [
        operation('function:bash:5', 'expand'),
        operation('function:bash:2', 'expand'),
        operation('conversation:user:2', 'expand'),
      ],
      {},
      masked.stateAfter,
    );
    expect(expanded.rejected).toEqual([]);
    expect(expanded.stateAfter).toEqual({});
    const view = projectView(ledger, expanded.stateAfter);
    expect(view.items.map((item) => item.message)).toEqual(original.items.map((item) => item.message));
    expect(view.tokens).toBe(original.tokens);
    expect(expanded.tokensAfter).toBe(original.tokens);
  });

  it('does not bring back a pruned object', () => {
    const ledger = session();
    const pruned = rehearse(ledger, [operation('function:bash:2', 'prune')]).stateAfter;
    const rehearsal = rehearse(ledger, [operation('function:bash:2', 'expand')], {}, pruned);
    expect(rehearsal.rejected.map((entry) => entry.reason)).toEqual(['not-applicable']);
    expect(rehearsal.stateAfter).toEqual(pruned);
  });

  it('may follow a mask with a fold, and a fold with a prune', () => {
    const ledger = session();
    const masked = rehearse(ledger, [operation('function:bash:5', 'mask')]).stateAfter;
    const folded = rehearse(ledger, [operation('function:bash:5', 'fold')], {}, masked);
    expect(folded.stateAfter['function:bash:5']?.operation).toBe('fold');
    const pruned = rehearse(ledger, [operation('function:bash:5', 'prune')], {}, folded.stateAfter);
    expect(pruned.stateAfter['function:bash:5']?.operation).toBe('prune');
    expect(pruned.accepted[0]?.tokensBefore).toBe(
      approximateTokenCounter.count(folded.stateAfter['function:bash:5']?.replacement ?? ''),
    );
  });
});

describe('measurement', () => {
  it('reports view tokens before and after that match projectView', () => {
    const ledger = session();
    const first = rehearse(ledger, [
      operation('function:read_file:1', 'fold'),
      operation('function:bash:5', 'mask'),
    ]);
    expect(first.tokensBefore).toBe(projectView(ledger, {}).tokens);
    expect(first.tokensAfter).toBe(projectView(ledger, first.stateAfter).tokens);
    expect(first.tokensAfter).toBeLessThan(first.tokensBefore);
    const second = rehearse(
      ledger,
      [operation('conversation:user:2', 'fold')],
      { tombstones: false },
      first.stateAfter,
    );
    expect(second.tokensBefore).toBe(first.tokensAfter);
    expect(second.tokensAfter).toBe(projectView(ledger, second.stateAfter).tokens);
  });

  it('counts the view like counting every view message from scratch', () => {
    const ledger = session();
    const rehearsal = rehearse(
      ledger,
      [
        operation('function:read_file:1', 'prune'),
        operation('function:bash:5', 'mask'),
        operation('function:bash:2', 'fold'),
      ],
      { tombstones: false },
    );
    const view = projectView(ledger, rehearsal.stateAfter);
    const fromScratch = view.items.reduce(
      (sum, item) => sum + countMessageTokens(approximateTokenCounter, item.message),
      0,
    );
    expect(view.tokens).toBe(fromScratch);
    expect(rehearsal.tokensAfter).toBe(fromScratch);
  });

  it('reports per-operation tokens of the object before and after', () => {
    const ledger = session();
    const rehearsal = rehearse(ledger, [
      operation('function:bash:5', 'mask'),
      operation('function:bash:2', 'prune'),
    ]);
    const [mask, prune] = rehearsal.accepted;
    expect(mask?.tokensBefore).toBe(ledger.get('function:bash:5')?.tokens);
    expect(mask?.tokensAfter).toBe(approximateTokenCounter.count(mask?.state?.replacement ?? ''));
    expect(prune?.tokensBefore).toBe(ledger.get('function:bash:2')?.tokens);
    expect(prune?.tokensAfter).toBe(approximateTokenCounter.count(prune?.state?.replacement ?? ''));
  });

  it('stamps new states with the commit id', () => {
    const ledger = session();
    expect(
      rehearse(ledger, [operation('function:bash:5', 'fold')]).stateAfter['function:bash:5']?.commitId,
    ).toBe('pending');
    expect(
      rehearse(ledger, [operation('function:bash:5', 'fold')], { commitId: 'c9' }).stateAfter[
        'function:bash:5'
      ]?.commitId,
    ).toBe('c9');
  });
});

describe('earliestEdit', () => {
  function firstChange(ledger: Ledger, state: ViewState): number | undefined {
    const before = projectView(ledger, {}).items;
    const after = projectView(ledger, state).items;
    for (let index = 0; index < Math.max(before.length, after.length); index += 1) {
      if (before[index]?.message !== after[index]?.message) return before[index]?.source;
    }
    return undefined;
  }

  it('is the first message whose view changes', () => {
    const ledger = session();
    const cases: Array<[PlannedOperation[], RehearseOptions, number]> = [
      [[operation('function:bash:5', 'mask')], {}, 13],
      [[operation('function:bash:5', 'prune')], {}, 13],
      [[operation('function:bash:5', 'prune')], { tombstones: false }, 12],
      [[operation('conversation:user:2', 'fold')], {}, 11],
      [[operation('skill:read_file:6', 'fold'), operation('function:bash:2', 'fold')], {}, 5],
    ];
    for (const [operations, options, expected] of cases) {
      const rehearsal = rehearse(ledger, operations, options);
      expect(rehearsal.earliestEdit).toBe(expected);
      expect(firstChange(ledger, rehearsal.stateAfter)).toBe(expected);
    }
  });

  it('is the expanded object for an expand', () => {
    const ledger = session();
    const folded = rehearse(ledger, [operation('function:bash:5', 'fold')]).stateAfter;
    expect(rehearse(ledger, [operation('function:bash:5', 'expand')], {}, folded).earliestEdit).toBe(13);
  });
});
