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
  clientAttachments,
  countMessageTokens,
  indexTranscript,
  type Ledger,
  requestText,
} from './ledger.js';
import { pinnedTokens } from './ledger-measures.js';
import { mentionBlocks } from './mention-blocks.js';
import { objectPayload, parseObjectPayload, payloadText } from './object-payload.js';
import type { ViewState } from './operations.js';
import { projectView } from './project-view.js';
import { objectText } from './render-replacement.js';
import { moduleSource } from './testing/long-session.js';
import { assistantMessage } from './testing/transcript-builders.js';
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
    expect(requestText(message)).toBe(`${WORDS}\n\n`);
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
  function session(rounds: number): Message[] {
    const messages: Message[] = [taskMessage()];
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
    const shown = JSON.stringify(governed.view);
    for (const [id, block] of [
      ['function:file_content:1', APP],
      ['function:folder_content:2', LIB],
    ] as const) {
      if (shown.includes(`expand(\\"${id}\\")`)) expect(await governor.expand('s', id)).toBe(block);
    }
    expect(shown).toContain('expand(\\"function:folder_content:2\\")');
  });
});
