/**
 * What Cline, Roo Code and Kilo Code attach to the user's words: the content of each `@`-mention,
 * in blocks at the end of the same text (`<file_content path="…">`, `<folder_content …>`, …), and
 * the environment details as a text part after the words. Outputs inside a request: they fold,
 * mask and prune in place, as tool results do, and the user's words around them stay.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { createGovernor } from './governor/create-governor.js';
import { createPinRule } from './governor/pins.js';
import {
  carriesOutput,
  clientAttachments,
  countMessageTokens,
  indexTranscript,
  type Ledger,
  requestText,
  turnStartOf,
} from './ledger.js';
import { pinnedTokens } from './ledger-measures.js';
import { mentionBlocks } from './mention-blocks.js';
import { objectPayload, parseObjectPayload, payloadText } from './object-payload.js';
import type { ViewState } from './operations.js';
import { projectView } from './project-view.js';
import { objectText } from './render-replacement.js';
import { LEDGER_IDS, type SessionState } from './session-state.js';
import { moduleSource } from './testing/long-session.js';
import { olderState, storedGovernor } from './testing/stored-governor.js';
import { assistantMessage, userMessage } from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';
import { type Message, messageText, text } from './transcript.js';

const WORDS =
  "<task>\nFix the NaN in 'src/app.py' (see below for file content), using 'src/lib/' (see below for folder content)\n</task>";
const fileBlock = (path: string, body: string) => `<file_content path="${path}">\n${body}\n</file_content>`;
const APP = fileBlock('src/app.py', moduleSource(101, 60));
const LIB = `<folder_content path="src/lib/">\n├── b.py\n└── c.py\n\n${fileBlock('src/lib/b.py', moduleSource(202, 60))}\n\n${fileBlock('src/lib/c.py', moduleSource(303, 60))}\n</folder_content>`;
const TASK = `${WORDS}\n\n${APP}\n\n${LIB}`;
const ENVIRONMENT = `<environment_details>\n# Current Working Directory (/p) Files\n${Array.from(
  { length: 80 },
  (_, file) => `src/generated/module_${file}.py`,
).join('\n')}\n\n# Current Mode\nACT MODE\n</environment_details>`;

/** Cline's first request: the task with what it mentions, then the environment details. */
const taskMessage = (): Message => ({ role: 'user', parts: [text(TASK), text(ENVIRONMENT)] });

function ledgerOf(messages: readonly Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
}

describe('mention blocks', () => {
  it('are read at the end of the words that mention them, each whole, a folder with its files', () => {
    const blocks = mentionBlocks(TASK);
    expect(
      blocks.map(({ start, end, tag, callArguments }) => [TASK.slice(start, end), tag, callArguments]),
    ).toEqual([
      [APP, 'file_content', '{"path":"src/app.py"}'],
      [LIB, 'folder_content', '{"path":"src/lib/"}'],
    ]);
    // A message sent while a task resumes: the words in `<user_message>`, an empty line in the file.
    const resumed =
      'New message to respond to:\n<user_message>\n\'test.txt\' (see below for file content) what is in it?\n</user_message>\n\n<file_content path="test.txt">\ntest 2\n\n</file_content>';
    const [file] = mentionBlocks(resumed);
    expect(resumed.slice(file!.start, file!.end)).toBe(
      '<file_content path="test.txt">\ntest 2\n\n</file_content>',
    );
    // Blocks that name nothing, or what git and the terminal said.
    const others = `Why? Workspace Problems (see below for diagnostics) and Git commit 'abc1234' (see below for commit info)\n\n<workspace_diagnostics>\nsrc/app.py\n- [Error] Line 3\n</workspace_diagnostics>\n\n<git_commit hash="abc1234">\nfix: nan\n</git_commit>`;
    expect(mentionBlocks(others).map((block) => [block.tag, block.callArguments])).toEqual([
      ['workspace_diagnostics', undefined],
      ['git_commit', '{"hash":"abc1234"}'],
    ]);
  });

  it('end at the closing tag the text ends or the next block opens after, though a file holds one', () => {
    const tricky = fileBlock('notes.md', 'Cline writes\n</file_content>\nafter each file.');
    const taskText = `Read 'notes.md' (see below for file content)\n\n${tricky}\n`;
    const [block] = mentionBlocks(taskText);
    expect(taskText.slice(block!.start, block!.end)).toBe(tricky);
  });

  it("pass over a slash command's block among them, which stays the user's words", () => {
    // Roo Code and Kilo Code expand `/init` into a block of its own after the mentions.
    const command = '<command name="init">\nDescription: Analyze the codebase\n</command>';
    const roo = `<task>Command 'init' (see below for command content) on 'src/app.py' (see below for file content)\n</task>\n\n${APP}\n\n${command}\n\n${LIB}`;
    expect(mentionBlocks(roo).map((block) => roo.slice(block.start, block.end))).toEqual([APP, LIB]);
    const message: Message = { role: 'user', parts: [text(roo)] };
    expect(requestText(message)).toContain(command);
    expect(requestText(message)).not.toContain('handler_101_7');
    expect(
      mentionBlocks(`<task>Command 'init' (see below for command content)\n</task>\n\n${command}`),
    ).toEqual([]);
  });

  it("are not read where the words say nothing follows, or blocks don't run to the end", () => {
    expect(mentionBlocks(`Here is a file:\n\n${APP}`)).toEqual([]);
    expect(mentionBlocks(`${WORDS}\n\n${APP}\n\nAnd one more thing.`)).toEqual([]);
    expect(mentionBlocks(`${WORDS}\n\n<file_content path="src/app.py">\nno end`)).toEqual([]);
    // A block pasted in the words before the note is the user's; the real ones come after it.
    const pasted = `Like this:\n\n${fileBlock('x.py', 'x')}\n\nnow ${WORDS}\n\n${APP}`;
    expect(mentionBlocks(pasted).map((block) => pasted.slice(block.start, block.end))).toEqual([APP]);
  });
});

describe('what Cline attached to a request', () => {
  it('is an output of the request, each block where it stands, the environment details a part', () => {
    const message = taskMessage();
    expect(clientAttachments(message, undefined)).toEqual([
      {
        partIndex: 0,
        range: { start: WORDS.length + 2, end: WORDS.length + 2 + APP.length },
        toolName: 'file_content',
        callArguments: '{"path":"src/app.py"}',
      },
      expect.objectContaining({ partIndex: 0, toolName: 'folder_content' }),
      { partIndex: 1, toolName: 'environment_details' },
    ]);
    // Environment details that open a message are not after anyone's words.
    expect(clientAttachments({ role: 'user', parts: [text(ENVIRONMENT)] }, undefined)).toEqual([]);
    expect(requestText(message)).toBe(`${WORDS}\n\n\n\n`);
  });

  it('leaves the task goal its words: the files and the environment are not pinned with it', () => {
    const ledger = ledgerOf([taskMessage(), assistantMessage('Reading.')]);
    const objects = ledger.objectsByMessage.get(0)!;
    expect(objects.map((object) => [object.id, object.attachedTo, object.pinned])).toEqual([
      ['conversation:user:1', undefined, true],
      ['function:file_content:1', 'conversation:user:1', false],
      ['function:folder_content:2', 'conversation:user:1', false],
      ['function:environment_details:3', 'conversation:user:1', false],
    ]);
    const [, app, lib, environment] = objects;
    expect(objectText(ledger, app!)).toBe(APP);
    expect(objectText(ledger, lib!)).toBe(LIB);
    expect(objectText(ledger, environment!)).toBe(ENVIRONMENT);
    expect(app!.tokens).toBe(approximateTokenCounter.count(APP));
    expect(app!.callArguments).toBe('{"path":"src/app.py"}');
    // What stays whatever happens is the words, not what came with them.
    expect(pinnedTokens(ledger)).toBeLessThan(approximateTokenCounter.count(`${WORDS}\n\n`) + 20);
    // What a file says is not what the user said.
    expect(ledger.spokenAnchors.has('handler_101_7')).toBe(false);
  });

  it('projects under its states in place, the words and the other blocks as they were', () => {
    const ledger = ledgerOf([taskMessage(), assistantMessage('Reading.')]);
    const binding = { end: 1, link: ledger.chain[0]! };
    const state = (replacement: string) => ({
      operation: 'fold' as const,
      replacement,
      commitId: 'c1',
      binding,
    });
    const folded: ViewState = { 'function:file_content:1': state('[folded function:file_content:1]') };
    const view = projectView(ledger, folded);
    const request = view.items[0]!;
    expect(request.message.parts).toEqual([
      text(`${WORDS}\n\n[folded function:file_content:1]\n\n${LIB}`),
      text(ENVIRONMENT),
    ]);
    expect(request.tokens).toBe(countMessageTokens(approximateTokenCounter, request.message));
    // Both blocks, and the environment details; a prune without a tombstone leaves the words.
    const all: ViewState = {
      'function:file_content:1': state('[folded A]'),
      'function:folder_content:2': { ...state(''), operation: 'prune' },
      'function:environment_details:3': state('[folded E]'),
    };
    expect(projectView(ledger, all).items[0]!.message.parts).toEqual([
      text(`${WORDS}\n\n[folded A]\n\n`),
      text('[folded E]'),
    ]);
    // With ids shown, each block carries its own where it stands.
    const shown = messageText(projectView(ledger, {}, { showIds: true }).items[0]!.message);
    expect(shown).toContain(`${APP}\n[id: function:file_content:1]\n\n<folder_content`);
  });

  it('keeps its exact text in the sidecar, which a reader of version 3 expands as it is', () => {
    const ledger = ledgerOf([taskMessage()]);
    const payload = objectPayload(ledger, ledger.get('function:folder_content:2')!);
    expect(payload).toMatchObject({ partIndex: 0, part: { type: 'text', text: LIB } });
    expect(payloadText(parseObjectPayload(JSON.stringify(payload), 'here'))).toBe(LIB);
  });
});

describe('a Cline session whose task mentions more than the window holds', () => {
  /** The task, then read_file rounds in Cline's text protocol. */
  function session(rounds: number, task: Message = taskMessage()): Message[] {
    const messages: Message[] = [task];
    for (let round = 0; round < rounds; round += 1) {
      messages.push(assistantMessage(`<read_file>\n<path>src/m${round}.py</path>\n</read_file>`));
      messages.push({
        role: 'user',
        parts: [
          text(`[read_file for 'src/m${round}.py'] Result:`),
          text(moduleSource(400 + round, 30)),
          text('<environment_details>\n# Current Mode\nACT MODE\n</environment_details>'),
        ],
      });
    }
    return messages;
  }

  it('fits: the files fold while the task stays in its words, and each comes back exactly', async () => {
    const messages = session(6);
    const ledger = ledgerOf(messages);
    const taskTokens = ledger.messageTokens[0]!;
    // Pinned whole, the task alone would be over the window.
    const window = Math.floor(taskTokens * 0.8);
    expect(ledger.totalTokens).toBeGreaterThan(window);
    const governor = createGovernor({
      provider: 'anthropic',
      window,
      store: createMemoryStore(),
      tokenCounter: approximateTokenCounter,
    });
    const governed = await governor.project('s', messages);
    expect(governed.viewTokens).toBeLessThanOrEqual(window);
    expect(governed.warnings.map((warning) => warning.code)).not.toContain('over-window');
    const task = messageText(governed.view[0]!);
    expect(task.startsWith(`${WORDS}\n\n`)).toBe(true);
    expect(task).not.toContain('handler_303_40');
    expect(governed.view.at(-1)).toEqual(messages.at(-1));
    // Each block is folded or masked where it stood, and comes back as it was.
    const shown = JSON.stringify(governed.view);
    for (const [id, block] of [
      ['function:file_content:1', APP],
      ['function:folder_content:2', LIB],
    ] as const) {
      expect(shown).toContain(`expand(\\"${id}\\")`);
      expect(await governor.expand('s', id)).toBe(block);
    }
  });
});

describe('environment details alone after a step (native tool calls)', () => {
  // Cline and Roo Code with native tool calls send them after the step's results, in the same
  // user message: the ledger gets them as a user message of their own after the tool message.
  const report = (round: number) =>
    `<environment_details>\n# Current Time\n2026-05-16T19:${String(10 + round)}:17Z\n\n# Current Mode\nACT MODE\n</environment_details>`;
  function session(rounds: number, task: Message = taskMessage()): Message[] {
    const messages: Message[] = [task];
    for (let round = 0; round < rounds; round += 1) {
      messages.push({
        role: 'assistant',
        parts: [
          { type: 'tool-call', id: `r${round}`, name: 'read_file', arguments: `{"path":"src/m${round}.py"}` },
        ],
      });
      messages.push({
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: `r${round}`,
            name: 'read_file',
            content: moduleSource(400 + round, 30),
          },
        ],
      });
      messages.push({ role: 'user', parts: [text(report(round))] });
    }
    return messages;
  }

  it('are an output of the step, inside the task: no request of their own', () => {
    const messages = session(3);
    const ledger = ledgerOf(messages);
    expect(
      ledger.objects.filter((object) => object.kind === 'conversation').map((object) => object.id),
    ).toEqual(['conversation:user:1']);
    const reported = ledger.objectsByMessage.get(3)![0]!;
    expect([reported.id, reported.partIndex, reported.callMessageIndex]).toEqual([
      'function:environment_details:5',
      undefined,
      undefined,
    ]);
    expect(ledger.get('conversation:user:1')!.span.end).toBe(messages.length);
    // The latest turn is the step: its call, its result and the report after them.
    expect(turnStartOf(messages, (index) => carriesOutput(ledger, index))).toBe(messages.length - 3);
    // Not after outputs, they are a request's words as before.
    const alone = ledgerOf([taskMessage(), assistantMessage('Which file?'), userMessage(report(0))]);
    expect(alone.get('conversation:user:2')).toBeDefined();
  });

  it('leave out what a state without the numbering bound under a request id past the first report', async () => {
    // An older version took each report for a request: its requests 2 to 4 were the reports, and
    // this version's second request, the follow-up, was its fifth.
    const messages = [...session(3), userMessage('Now fix module 401.'), assistantMessage('On it.')];
    const ledger = ledgerOf(messages);
    const followUp = ledger.get('conversation:user:2')!;
    expect(followUp.span).toEqual({ start: 10, end: 12 });
    const older = olderState(ledger, {
      'conversation:user:2': {
        operation: 'prune',
        replacement: '[pruned conversation:user:2]',
        commitId: 'old',
        binding: { end: 12, link: ledger.chain[11]! },
      },
    });
    const shown = async (state: SessionState) =>
      (await storedGovernor(state)).governor.project('s', messages);
    const governed = await shown(older);
    expect(JSON.stringify(governed.view)).not.toContain('[pruned conversation:user:2]');
    expect(governed.warnings.find((warning) => warning.code === 'transcript-diverged')?.messageIndex).toBe(0);
    // Under this numbering, the same state holds.
    const current = await shown({ ...older, ids: LEDGER_IDS });
    expect(JSON.stringify(current.view)).toContain('[pruned conversation:user:2]');
  });

  it('never hold a span fold that ends outside its conversation, whatever its binding', async () => {
    const messages = [...session(3), userMessage('Now fix module 401.'), assistantMessage('On it.')];
    const ledger = ledgerOf(messages);
    const { governor } = await storedGovernor({
      ...olderState(ledger, {
        // Ends before the request it is stored for starts: as a view it would go back on itself.
        'conversation:user:2': {
          operation: 'fold',
          keepRequest: true,
          spanEnd: 6,
          replacement: '[folded conversation:user:2]',
          commitId: 'old',
          binding: { end: 6, link: ledger.chain[5]! },
        },
      }),
      ids: LEDGER_IDS,
    });
    const governed = await governor.project('s', messages);
    expect(governed.view).toEqual(messages);
  });

  it('leave out what a state without the numbering bound under a tool id past the first report', async () => {
    // A task without attachments: ids agree up to the first report, one apart after it.
    const messages = session(3, userMessage('Fix the NaN in src/app.py.'));
    const ledger = ledgerOf(messages);
    expect(ledger.get('function:read_file:1')?.messageIndex).toBe(2);
    expect(ledger.get('function:read_file:3')?.messageIndex).toBe(5);
    const fold = (id: string, end: number) => ({
      [id]: {
        operation: 'fold' as const,
        replacement: `[folded ${id}]`,
        commitId: 'old',
        binding: { end, link: ledger.chain[end - 1]! },
      },
    });
    const { governor } = await storedGovernor(
      olderState(ledger, { ...fold('function:read_file:1', 3), ...fold('function:read_file:3', 6) }),
    );
    const shown = JSON.stringify((await governor.project('s', messages)).view);
    expect(shown).toContain('[folded function:read_file:1]');
    expect(shown).not.toContain('[folded function:read_file:3]');
  });

  it('offer no payload whose id names an object that ends elsewhere, whatever the numbering says', async () => {
    const messages = session(3, userMessage('Fix the NaN in src/app.py.'));
    const ledger = ledgerOf(messages);
    const bound = (end: number) => ({ end, link: ledger.chain[end - 1]! });
    // `function:read_file:3` is the read in message 5 here; a payload bound at message 8 was another's.
    const { governor } = await storedGovernor({
      ...olderState(ledger, {}, { 'function:read_file:1': bound(3), 'function:read_file:3': bound(9) }),
      ids: LEDGER_IDS,
    });
    const governed = await governor.project('s', messages);
    expect(Object.keys(governed.recoverable)).toEqual(['function:read_file:1']);
  });
});

describe('the window rescue', () => {
  it('leaves outputs too small for an operation: their fold would be bigger', async () => {
    const messages: Message[] = [
      userMessage('Read both.'),
      {
        role: 'assistant',
        parts: [
          { type: 'tool-call', id: 'big', name: 'read_file', arguments: '{"path":"big.py"}' },
          { type: 'tool-call', id: 'small', name: 'read_file', arguments: '{"path":"small.py"}' },
        ],
      },
      {
        role: 'tool',
        parts: [
          { type: 'tool-result', callId: 'big', name: 'read_file', content: moduleSource(800, 200) },
          { type: 'tool-result', callId: 'small', name: 'read_file', content: 'x = 1' },
        ],
      },
    ];
    // Even with the big output folded, the latest turn is over this window.
    const governor = createGovernor({
      provider: 'anthropic',
      window: 40,
      store: createMemoryStore(),
      tokenCounter: approximateTokenCounter,
    });
    const governed = await governor.project('s', messages);
    expect(governed.warnings.map((warning) => warning.code)).toContain('latest-turn-folded');
    const results = governed.view.at(-1)!.parts;
    expect(JSON.stringify(results[0])).toContain('expand(\\"function:read_file:1\\")');
    expect(results[1]).toEqual(messages[2]!.parts[1]);
  });
});
