/**
 * Tool outputs a client attaches to a user message as text parts of their own: Claude Code's
 * files (one the user `@`-mentioned; those it read last, re-attached after it compacted the
 * conversation), each a `Result of calling the Read tool:` reminder after a reminder of the call.
 * They are outputs inside a request: they fold, mask and prune as tool results do, the request
 * and the user's words around them stay.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import type { Anchor } from './anchors.js';
import { createGovernor } from './governor/create-governor.js';
import { createPinRule } from './governor/pins.js';
import { carriesOutput, clientAttachments, indexTranscript, type Ledger, turnStartOf } from './ledger.js';
import { pinnedTokens } from './ledger-measures.js';
import {
  ATTACHED_OUTPUT_SPEC_VERSION,
  objectPayload,
  parseObjectPayload,
  payloadText,
} from './object-payload.js';
import { isSpanFold, type ViewState } from './operations.js';
import { projectView } from './project-view.js';
import { rehearsePlan } from './rehearse-plan.js';
import { objectText } from './render-replacement.js';
import {
  LEDGER_IDS,
  payloadKey,
  readSessionState,
  type SessionState,
  sidecarKeyCandidates,
} from './session-state.js';
import { STORE_SCHEMA_VERSION } from './store.js';
import { moduleSource } from './testing/long-session.js';
import { olderState, storedGovernor } from './testing/stored-governor.js';
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
import { type Message, messageText, text } from './transcript.js';
import { entryFeaturizer } from './valuator/entry-features.js';

const called = (path: string) =>
  `<system-reminder>\nCalled the Read tool with the following input: {"file_path":"/work/${path}"}\n</system-reminder>\n`;
const result = (body: string) =>
  `<system-reminder>\nResult of calling the Read tool:\n${body}\n</system-reminder>\n`;
const fileA = moduleSource(101, 120);
const fileB = moduleSource(202, 120);
const QUESTION = 'You must answer with the token alone: which one ended notes/part-13.txt?';

/**
 * The request Claude Code sends after `/compact`: the summary, the files it read last as two
 * user messages (the first call alone, then each result with the next call), and the question.
 */
function afterCompaction(): Message[] {
  return [
    userMessage('This session is being continued from a previous conversation. Summary: notes read.'),
    assistantMessage('Understood.'),
    userMessage(called('src/a.py')),
    {
      role: 'user',
      parts: [
        text(result(fileA)),
        text(called('src/b.py')),
        text(result(fileB)),
        text('<local-command-stdout>Compacted</local-command-stdout>'),
        text(QUESTION),
      ],
    },
  ];
}

function ledgerOf(messages: readonly Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter });
}

function governorOf(window: number, store = createMemoryStore()) {
  return createGovernor({ provider: 'anthropic', window, store, tokenCounter: approximateTokenCounter });
}

describe('outputs a client attached to a user message', () => {
  it('are read with their tool and their call, also from the user message before', () => {
    const messages = afterCompaction();
    expect(clientAttachments(messages[3]!, messages[2])).toEqual([
      { partIndex: 0, toolName: 'Read', callArguments: '{"file_path":"/work/src/a.py"}' },
      { partIndex: 2, toolName: 'Read', callArguments: '{"file_path":"/work/src/b.py"}' },
    ]);
    // A reminder that is not a tool's result, or a result that does not end its part, is the user's.
    const own: Message = {
      role: 'user',
      parts: [
        text('<system-reminder>\nThe user opened src/a.py\n</system-reminder>'),
        text(`${result('x')} and more`),
      ],
    };
    expect(clientAttachments(own, undefined)).toEqual([]);
    expect(clientAttachments({ role: 'user', parts: [text(result('x'))] }, undefined)).toEqual([
      { partIndex: 0, toolName: 'Read' },
    ]);
    // opencode's `@`-mentioned file: the call bare, its output the next part, then the words.
    const bareCall = 'Called the Read tool with the following input: {"filePath":"/p/src/a.ts"}';
    const opencode: Message = {
      role: 'user',
      parts: [
        text(bareCall),
        text('<file>\n00001| export const a = 1;\n</file>'),
        text('What does a.ts export?'),
      ],
    };
    expect(clientAttachments(opencode, undefined)).toEqual([
      { partIndex: 1, toolName: 'Read', callArguments: '{"filePath":"/p/src/a.ts"}' },
    ]);
    // A bare call names only the part after it in its own message.
    expect(clientAttachments({ role: 'user', parts: [text('Look.')] }, userMessage(bareCall))).toEqual([]);
  });

  it('are tool outputs of the request they came with, which stays a request', () => {
    const ledger = ledgerOf(afterCompaction());
    const attached = ledger.objectsByMessage.get(3)!;
    expect(attached.map((object) => [object.id, object.kind, object.partIndex])).toEqual([
      ['conversation:user:3', 'conversation', undefined],
      ['function:Read:1', 'function', 0],
      ['function:Read:2', 'function', 2],
    ]);
    expect(attached[1]!.callArguments).toBe('{"file_path":"/work/src/a.py"}');
    expect(attached[2]!.tokens).toBe(approximateTokenCounter.count(result(fileB)));
    expect(objectText(ledger, attached[1]!)).toBe(result(fileA));
    // The request reads as the user's words: its header and tombstone do not quote a file.
    expect(objectText(ledger, attached[0]!)).not.toContain('Result of calling');
    expect(objectText(ledger, attached[0]!)).toContain(QUESTION);
    expect(carriesOutput(ledger, 3)).toBe(false);
    // The latest turn holds both user messages: the model has seen neither.
    expect(turnStartOf(ledger.messages, (index) => carriesOutput(ledger, index))).toBe(2);
    // What a file says is not what the user said.
    expect(ledger.spokenAnchors.has('handler_101_7')).toBe(false);
    expect(ledger.spokenAnchors.has('notes/part-13.txt')).toBe(true);
  });

  it('project under their states in place, the rest of the request as it was', () => {
    const ledger = ledgerOf(afterCompaction());
    const binding = { end: 4, link: ledger.chain[3]! };
    const folded: ViewState = {
      'function:Read:1': {
        operation: 'fold',
        replacement: '[folded function:Read:1]',
        commitId: 'c1',
        binding,
      },
    };
    const view = projectView(ledger, folded);
    const request = view.items.at(-1)!.message;
    expect(request.parts.map((part) => (part.type === 'text' ? part.text : part.type))).toEqual([
      '[folded function:Read:1]',
      called('src/b.py'),
      result(fileB),
      '<local-command-stdout>Compacted</local-command-stdout>',
      QUESTION,
    ]);
    expect(view.tokens).toBe(
      projectView(ledger, {}).tokens -
        ledger.get('function:Read:1')!.tokens +
        approximateTokenCounter.count('[folded function:Read:1]'),
    );
    // Pruned without a tombstone, a part leaves; a request left with nothing names what left.
    const prune = () => ({ operation: 'prune' as const, replacement: '', commitId: 'c1', binding });
    const pruned = projectView(ledger, { 'function:Read:1': prune() }).items.at(-1)!.message;
    expect(pruned.parts).toHaveLength(4);
    const alone = ledgerOf([
      userMessage('Read them.'),
      assistantMessage('Reading.'),
      { role: 'user', parts: [text(result(fileA))] },
    ]);
    const bare = projectView(alone, {
      'function:Read:1': { ...prune(), binding: { end: 3, link: alone.chain[2]! } },
    });
    expect(messageText(bare.items.at(-1)!.message)).toBe('[pruned function:Read:1]');
    // With ids shown, each attached output carries its own.
    const shown = projectView(ledger, {}, { showIds: true }).items.at(-1)!.message;
    expect(messageText(shown)).toContain('[id: function:Read:2]');
    expect(messageText(shown)).toContain('[id: conversation:user:3]');
  });

  it('keep their text exactly in the sidecar, at a payload version older readers refuse', () => {
    const ledger = ledgerOf(afterCompaction());
    const payload = objectPayload(ledger, ledger.get('function:Read:2')!);
    expect(payload.specVersion).toBe(ATTACHED_OUTPUT_SPEC_VERSION);
    expect(payload).toMatchObject({
      kind: 'function',
      messageIndex: 3,
      partIndex: 2,
      part: { type: 'text' },
    });
    const read = parseObjectPayload(JSON.stringify(payload), 'here');
    expect(payloadText(read)).toBe(result(fileB));
  });
});

describe('outputs attached to a request, beside the rest of the ledger', () => {
  it('keep a pin of their own: a request holding a pinned file does not fold or prune whole', () => {
    const rules = `<system-reminder>\nCalled the Read tool with the following input: {"file_path":"/work/CLAUDE.md"}\n</system-reminder>\n`;
    const messages: Message[] = [
      userMessage('Set the project up.'),
      assistantMessage('Done.'),
      { role: 'user', parts: [text(rules), text(result('Never push to main.')), text('Follow @CLAUDE.md')] },
      assistantMessage('Understood.'),
      userMessage('Now the tests.'),
      assistantMessage('Running them.'),
    ];
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    const file = ledger.objectsByMessage.get(2)!.find((object) => object.attachedTo !== undefined)!;
    expect([file.id, file.kind, file.pinReason]).toEqual(['skill:Read:1', 'skill', 'rules file']);
    for (const operation of ['fold', 'prune'] as const) {
      const plan = {
        planner: 'test',
        operations: [{ objectId: 'conversation:user:2', operation, reason: 'test' }],
      };
      const rehearsal = rehearsePlan(ledger, {}, plan);
      expect(rehearsal.accepted).toEqual([]);
      expect(rehearsal.rejected[0]?.detail).toContain('skill:Read:1');
    }
  });

  it('leave the task goal to the words they came with, not to the reminder of their call', () => {
    // Claude Code's first request for a prompt that `@`-mentions a file.
    const messages: Message[] = [
      userMessage(called('src/a.py')),
      { role: 'user', parts: [text(result(fileA)), text(`@src/a.py ${QUESTION}`)] },
    ];
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    expect(ledger.get('conversation:user:1')?.pinned).toBe(false);
    expect(ledger.get('conversation:user:2')?.pinReason).toBe('first user request (task goal)');
    expect(ledger.get('function:Read:1')?.pinned).toBe(false);
    // What stays whatever happens is the prompt, not the file that came with it.
    const prompt = ledger.messageTokens[1]! - ledger.get('function:Read:1')!.tokens;
    expect(pinnedTokens(ledger)).toBe(prompt);
  });

  it('join the turn of the request that names their call, and only that', () => {
    const isOutput = (ledger: Ledger) => (index: number) => carriesOutput(ledger, index);
    const start = [userMessage('Summary.'), assistantMessage('Ok.')];
    const named = [
      ...start,
      userMessage(called('src/a.py')),
      { role: 'user' as const, parts: [text(result(fileA)), text(QUESTION)] },
    ];
    expect(turnStartOf(named, isOutput(ledgerOf(named)))).toBe(2);
    // A request before that does not name the call starts no turn with it.
    const apart = [
      ...start,
      userMessage('Look at this.'),
      { role: 'user' as const, parts: [text(result(fileA)), text(QUESTION)] },
    ];
    expect(turnStartOf(apart, isOutput(ledgerOf(apart)))).toBe(3);
    // Nor does a request whose first part is the user's own.
    const words = [
      ...start,
      userMessage(called('src/a.py')),
      { role: 'user' as const, parts: [text(QUESTION), text(result(fileA))] },
    ];
    expect(turnStartOf(words, isOutput(ledgerOf(words)))).toBe(3);
  });

  it("are output to the valuator: what only they hold is not the user's words", () => {
    // Older than the latest steps, which show everything they hold.
    const steps = Array.from({ length: 8 }, (_, step) =>
      toolRound(`later-${step}`, 'Read', { file_path: `/work/src/n${step}.py` }, moduleSource(400 + step, 4)),
    );
    const ledger = ledgerOf([...afterCompaction(), ...steps.flat()]);
    const featurizer = entryFeaturizer(ledger);
    const entry = (value: string) => ({ value, kind: 'identifier' }) as Anchor;
    expect(featurizer.shownElsewhere(entry('handler_101_7'))).toBe(false);
    // What the request says itself is.
    expect(featurizer.shownElsewhere(entry('notes/part-13.txt'))).toBe(true);
  });
});

describe('a latest turn whose attached outputs alone are over the window', () => {
  it('folds them recoverably and keeps the question as the client sent it', async () => {
    const messages = afterCompaction();
    const whole = ledgerOf(messages).totalTokens;
    const window = Math.floor(whole * 0.6);
    const governor = governorOf(window);
    const governed = await governor.project('s', messages);
    expect(governed.viewTokens).toBeLessThanOrEqual(window);
    expect(governed.warnings.map((warning) => warning.code)).toContain('latest-turn-folded');
    expect(governed.warnings.map((warning) => warning.code)).not.toContain('over-window');
    const request = governed.view.at(-1)!;
    expect(request.parts.at(-1)).toEqual(text(QUESTION));
    const shown = messageText(request);
    const folded = ['function:Read:1', 'function:Read:2'].filter((id) => shown.includes(`expand("${id}")`));
    expect(folded.length).toBeGreaterThan(0);
    for (const id of folded) {
      const expanded = await governor.expand('s', id);
      expect([result(fileA), result(fileB)]).toContain(expanded);
    }
    // The call the first file came with, in the user message before, stays where it was.
    expect(governed.view.at(-2)).toEqual(messages[2]);
  });

  it("folds them before the turn's own output, which the agent's next step reads", async () => {
    // Claude Code after it compacted by itself: the step it was taking, then the files it read
    // last re-attached after that step's result.
    const own = moduleSource(303, 160);
    const messages: Message[] = [
      userMessage(
        'This session is being continued from a previous conversation. Summary: go on with note 10.',
      ),
      ...toolRound('call_10', 'Bash', { command: 'cat notes/part-10.txt' }, own),
      {
        role: 'user',
        parts: [
          text(called('notes/part-09.txt')),
          text(result(fileA)),
          text(called('notes/part-08.txt')),
          text(result(fileB)),
        ],
      },
    ];
    const window = Math.floor(ledgerOf(messages).totalTokens * 0.65);
    const governor = governorOf(window);
    const governed = await governor.project('s', messages);
    expect(governed.viewTokens).toBeLessThanOrEqual(window);
    expect(governed.warnings.map((warning) => warning.code)).toContain('latest-turn-folded');
    expect(governed.view[2]).toEqual(messages[2]);
    const shown = messageText(governed.view.at(-1)!);
    for (const id of ['function:Read:2', 'function:Read:3']) expect(shown).toContain(`expand("${id}")`);
  });

  it('lets the planner fold or mask them like any output once the work went on, the request pinned', async () => {
    const messages: Message[] = [...afterCompaction(), assistantMessage('E2E-TOKEN-1 it was.')];
    messages.push(userMessage('Now review src/c.py and the modules it imports.'));
    for (let step = 0; step < 8; step += 1) {
      const path = `/work/src/m${step}.py`;
      messages.push(...toolRound(`read-${step}`, 'Read', { file_path: path }, moduleSource(300 + step, 40)));
    }
    const store = createMemoryStore();
    const window = Math.floor(ledgerOf(messages).totalTokens * 0.8);
    const governor = governorOf(window, store);
    const governed = await governor.project('s', messages);
    expect(governed.viewTokens).toBeLessThanOrEqual(window);
    // The question states a rule: its request is pinned, and stays; the files it came with do not.
    const pinned = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    expect(pinned.get('conversation:user:3')?.pinReason).toBe('user constraint');
    const touched = governed.commits.flatMap((commit) =>
      commit.operations.map((operation) => operation.objectId),
    );
    expect(touched).toContain('function:Read:1');
    // Only the work after it folded: the request itself stays.
    const request = (await readSessionState(store, 's')).state.objects['conversation:user:3'];
    expect(request !== undefined && isSpanFold(request)).toBe(true);
    const shown = JSON.stringify(governed.view);
    expect(shown).not.toContain('handler_101_60');
    expect(shown).toContain(JSON.stringify(QUESTION));
  });
});

describe('states an older version wrote, which numbered attached outputs otherwise', () => {
  // The ids of a read before the attached file agree in every numbering; after it, an older
  // version's `function:Read:3` is this one's `function:Read:4`, and its `function:Read:3` the
  // other result of the same message.
  const messages: Message[] = [
    userMessage('Set the project up.'),
    ...toolRound('z', 'Read', { file_path: '/work/src/z.py' }, moduleSource(500, 40)),
    userMessage(called('src/a.py')),
    { role: 'user', parts: [text(result(fileA)), text('Now compare x.py and y.py.')] },
    assistantCalls([
      toolCall('x', 'Read', { file_path: '/work/src/x.py' }),
      toolCall('y', 'Read', { file_path: '/work/src/y.py' }),
    ]),
    toolMessage(
      toolResult('x', 'Read', moduleSource(600, 40)),
      toolResult('y', 'Read', moduleSource(700, 40)),
    ),
    assistantMessage('They differ in handler_600_3.'),
  ];
  const ledger = ledgerOf(messages);
  const fold = (replacement: string, end: number) => ({
    operation: 'fold' as const,
    replacement,
    commitId: 'old',
    binding: { end, link: ledger.chain[end - 1]! },
  });
  /** What a version before `LEDGER_IDS` stored: the z read and the y read folded, by its ids. */
  const olderFolds = (): SessionState =>
    olderState(
      ledger,
      {
        'function:Read:1': fold('[folded function:Read:1: Read /work/src/z.py]', 3),
        'function:Read:3': fold('[folded function:Read:3: Read /work/src/y.py]', 7),
      },
      {
        'function:Read:1': { end: 3, link: ledger.chain[2]! },
        'function:Read:3': { end: 7, link: ledger.chain[6]! },
      },
    );

  it('hold before the first attached output, and never apply past it to what their ids name now', async () => {
    expect(ledger.get('function:Read:3')?.callId).toBe('x');
    const { governor, store } = await storedGovernor(olderFolds());
    const governed = await governor.project('s', messages);
    const shown = JSON.stringify(governed.view);
    expect(shown).toContain('[folded function:Read:1: Read /work/src/z.py]');
    // The y read's fold does not take the x read's place: both results are there as they came.
    expect(shown).not.toContain('/work/src/y.py]');
    expect(governed.view[6]).toEqual(messages[6]);
    const warning = governed.warnings.find((each) => each.code === 'transcript-diverged');
    expect(warning?.messageIndex).toBe(4);
    expect(warning?.message).toContain('an older version numbered the objects from message 4 on');
    // The run's write records the numbering, under which the next call reads the state as it is.
    const stored = (await readSessionState(store, 's')).state;
    expect(stored.ids).toBe(LEDGER_IDS);
    expect(Object.keys(stored.objects)).toEqual(['function:Read:1']);
    expect(Object.keys(stored.payloads)).toEqual(['function:Read:1']);
    const again = await governor.project('s', messages);
    expect(again.warnings.map((each) => each.code)).not.toContain('transcript-diverged');
  });

  it("keep an older version's payload apart from this one's under the same id and binding", async () => {
    const { governor, store } = await storedGovernor(olderFolds());
    // The y read's payload as an older version stored it, under the id that names the x read now.
    const ySidecar = {
      schemaVersion: STORE_SCHEMA_VERSION,
      sessionId: 's',
      objectId: sidecarKeyCandidates(payloadKey('function:Read:3', { end: 7, link: ledger.chain[6]! })).at(
        -1,
      )!,
      operation: 'fold' as const,
      payload: JSON.stringify({
        ...objectPayload(ledger, ledger.get('function:Read:4')!),
        objectId: 'function:Read:3',
      }),
      searchText: moduleSource(700, 40),
      tokens: 100,
      commitId: 'old',
      createdAt: 0,
    };
    await store.putPayloads([ySidecar]);
    await governor.project('s', messages);
    const folded = await governor.applyAgentPlan('s', messages, {
      planner: 'agent',
      operations: [{ objectId: 'function:Read:3', operation: 'fold', reason: 'test' }],
    });
    expect(folded.accepted.map((entry) => entry.objectId)).toEqual(['function:Read:3']);
    // The id named the y read for the older version: the x read's key is tagged by its content,
    // and the bare id recovers neither.
    const key = folded.accepted[0]!.key;
    expect(key).toMatch(/^function:Read:3~[0-9a-f]{6}$/);
    expect(await governor.expand('s', key)).toBe(moduleSource(600, 40));
    expect(await governor.expand('s', 'function:Read:3')).toBeUndefined();
    // Search finds the x read under its key, never the older record of the y read.
    const hits = await governor.searchContext('s', 'handler_600_3 handler_700_3');
    expect(hits.map((hit) => hit.objectId)).toEqual([key]);
    expect(hits[0]!.snippet).toContain('handler_600');
  });

  it("read an older version's payload where its id still names it, and this one's after it wrote", async () => {
    const { governor, store } = await storedGovernor(olderFolds());
    // What an older version stored for the z read, before any attached output: kept.
    const zKey = payloadKey('function:Read:1', { end: 3, link: ledger.chain[2]! });
    await store.putPayloads([
      {
        schemaVersion: STORE_SCHEMA_VERSION,
        sessionId: 's',
        objectId: sidecarKeyCandidates(zKey).at(-1)!,
        operation: 'fold',
        payload: JSON.stringify(objectPayload(ledger, ledger.get('function:Read:1')!)),
        searchText: moduleSource(500, 40),
        tokens: 100,
        commitId: 'old',
        createdAt: 0,
      },
    ]);
    await governor.project('s', messages);
    expect(await governor.expand('s', 'function:Read:1')).toBe(moduleSource(500, 40));
    expect((await governor.searchContext('s', 'handler_500_3')).map((hit) => hit.objectId)).toEqual([
      'function:Read:1',
    ]);
    // This version folds the x read; an older one then writes the state back without the numbering.
    await governor.applyAgentPlan('s', messages, {
      planner: 'agent',
      operations: [{ objectId: 'function:Read:3', operation: 'fold', reason: 'test' }],
    });
    const { version, state } = await readSessionState(store, 's');
    const { ids: _dropped, ...older } = state;
    await store.writeState('s', older, version);
    // Its fold is out (its id is past the first attached output), the z read's stays, recoverable.
    const governed = await governor.project('s', messages);
    expect(governed.recoverable).toHaveProperty('function:Read:1');
    expect(governed.recoverable).not.toHaveProperty('function:Read:3');
    expect(await governor.expand('s', 'function:Read:1')).toBe(moduleSource(500, 40));
  });

  it('leave this version its payloads after an older one wrote the state back', async () => {
    const plain = [
      ...messages.slice(0, 3),
      userMessage('Now compare x.py and y.py.'),
      assistantMessage('Comparing them.'),
    ];
    const { governor, store } = await storedGovernor();
    const applied = await governor.applyAgentPlan('s', plain, {
      planner: 'agent',
      operations: [{ objectId: 'function:Read:1', operation: 'fold', reason: 'test' }],
    });
    expect(applied.rejected).toEqual([]);
    // An older version reads the state and writes it back: it knows no `ids`, and drops it.
    const { version, state } = await readSessionState(store, 's');
    const { ids: _dropped, ...older } = state;
    await store.writeState('s', older, version);
    const governed = await governor.project('s', plain);
    expect(JSON.stringify(governed.view)).toContain('expand(\\"function:Read:1\\")');
    expect(await governor.expand('s', 'function:Read:1')).toBe(moduleSource(500, 40));
  });

  it('hold whole in a transcript without attached outputs', async () => {
    const plain = [...messages.slice(0, 3), userMessage('Now compare x.py and y.py.')];
    const plainLedger = ledgerOf(plain);
    const { governor, store } = await storedGovernor(
      olderState(
        plainLedger,
        { 'function:Read:1': fold('[folded function:Read:1: Read /work/src/z.py]', 3) },
        { 'function:Read:1': { end: 3, link: plainLedger.chain[2]! } },
      ),
    );
    const governed = await governor.project('s', plain);
    expect(governed.warnings).toEqual([]);
    expect(JSON.stringify(governed.view)).toContain('[folded function:Read:1: Read /work/src/z.py]');
    // The next write records the numbering, and the state stays whole under it.
    const forced = await governor.project('s', plain, { force: true });
    expect(forced.warnings.map((warning) => warning.code)).not.toContain('transcript-diverged');
    const stored = (await readSessionState(store, 's')).state;
    expect(stored.ids).toBe(LEDGER_IDS);
    expect(stored.objects['function:Read:1']?.replacement).toBe(
      '[folded function:Read:1: Read /work/src/z.py]',
    );
  });
});
