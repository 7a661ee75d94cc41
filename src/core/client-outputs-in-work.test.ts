/**
 * What clients send inside the work, as user messages of their own: Claude Code's
 * `<system-reminder>` blocks beside a step's results (a nudge to use its task tools, a file the
 * user changed), Codex's notes, the images a tool returned, and a client's answer to the model's
 * words (Cline's error that no tool was used, Claude Code's prompt to go on). They are the
 * harness's, not the user's: each an output of the step before it, inside the request the work
 * serves.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { createGovernor } from './governor/create-governor.js';
import { createPinRule } from './governor/pins.js';
import { hasMilestone } from './governor/triggers.js';
import {
  carriesOutput,
  clientReply,
  clientReport,
  ENVIRONMENT_TOOL,
  indexTranscript,
  type Ledger,
  MEDIA_TOOL,
  REMINDER_TOOL,
  turnStartOf,
} from './ledger.js';
import type { ObjectState, ViewState } from './operations.js';
import { LEDGER_IDS, type SessionState } from './session-state.js';
import { moduleSource } from './testing/long-session.js';
import { olderState, storedGovernor } from './testing/stored-governor.js';
import { assistantMessage, systemMessage, toolRound, userMessage } from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';
import { type ImagePart, type Message, text } from './transcript.js';

const reminder = (body: string) => `<system-reminder>\n${body}\n</system-reminder>`;
const TASK = 'Make every handler read its code from settings.';

/** A task worked on in `steps` reads, each step's results followed by the harness's reminder. */
function session(steps: number, reminded = true): Message[] {
  const messages: Message[] = [userMessage(TASK)];
  for (let step = 0; step < steps; step += 1) {
    messages.push(
      ...toolRound(`c${step}`, 'Read', { file_path: `/w/m${step}.py` }, moduleSource(100 + step, 30)),
    );
    if (reminded)
      messages.push(userMessage(reminder(`The task tools haven't been used recently (step ${step}).`)));
  }
  return messages;
}

function ledgerOf(messages: readonly Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
}

const requests = (ledger: Ledger) =>
  ledger.objects.filter((object) => object.kind === 'conversation').map((object) => object.id);

describe("a client's reminders after a step's results", () => {
  it('are an output of the step, inside the task: no request of their own', () => {
    const messages = session(3);
    const ledger = ledgerOf(messages);
    expect(requests(ledger)).toEqual(['conversation:user:1']);
    const reported = ledger.objectsByMessage.get(3)![0]!;
    expect([reported.id, reported.kind, reported.partIndex]).toEqual([
      `function:${REMINDER_TOOL}:2`,
      'function',
      undefined,
    ]);
    expect(ledger.get('conversation:user:1')!.span.end).toBe(messages.length);
    expect(ledger.get('conversation:user:1')!.pinReason).toBe('first user request (task goal)');
    // The latest turn is the step: its call, its result and the reminder after them.
    expect(turnStartOf(messages, (index) => carriesOutput(ledger, index))).toBe(messages.length - 3);
    // Several reminders, in parts of their own or in one text, report alike.
    const two: Message = {
      role: 'user',
      parts: [text(reminder('a')), text(`${reminder('b')}\n${reminder('c')}`)],
    };
    expect(clientReport(two)).toBe(REMINDER_TOOL);
  });

  it('stay a request where they hold the words of the user or open a request', () => {
    // What the user sent while the tools ran, which Claude Code surfaces in the running turn.
    const sent = reminder(
      'The user sent a new message while you were working:\nAlso keep the old names as aliases.',
    );
    const midTurn = ledgerOf([...session(2), userMessage(sent)]);
    expect(requests(midTurn)).toEqual(['conversation:user:1', 'conversation:user:2']);
    // Not after outputs: after the model's words, a reminder is a request's words as before.
    const afterWords = ledgerOf([
      userMessage(TASK),
      assistantMessage('Which file?'),
      userMessage(reminder('x')),
    ]);
    expect(requests(afterWords)).toEqual(['conversation:user:1', 'conversation:user:2']);
    // The reminder of a call whose result the next message attaches opens a request.
    const call = reminder('Called the Read tool with the following input: {"file_path":"/w/a.py"}');
    expect(clientReport(userMessage(call))).toBeUndefined();
    expect(requests(ledgerOf([...session(1), userMessage(call)]))).toEqual([
      'conversation:user:1',
      'conversation:user:2',
    ]);
    // Words beside a reminder, or a part that is not text, are the user's.
    expect(clientReport(userMessage(`${reminder('x')}\nand fix the tests`))).toBeUndefined();
    const image: Message = {
      role: 'user',
      parts: [
        text(reminder('x')),
        { type: 'image', ref: 'data:image/png;base64,iVBORw0KGgo=', source: 'data' },
      ],
    };
    expect(clientReport(image)).toBeUndefined();
    expect(clientReport(userMessage('<environment_details>\n# Time\n</environment_details>'))).toBe(
      ENVIRONMENT_TOOL,
    );
  });

  it('leave the governor to plan the task as it would without them: no past request made of one', async () => {
    const governed = async (reminded: boolean) => {
      const governor = createGovernor({
        provider: 'anthropic',
        window: 6_000,
        store: createMemoryStore(),
        tokenCounter: approximateTokenCounter,
      });
      const operations: string[] = [];
      for (let steps = 1; steps <= 14; steps += 1) {
        const result = await governor.project('s', session(steps, reminded));
        expect(result.viewTokens).toBeLessThanOrEqual(6_000);
        for (const commit of result.commits)
          for (const operation of commit.operations)
            if (operation.objectId.startsWith('conversation:'))
              operations.push(`${steps} ${operation.operation} ${operation.objectId}`);
      }
      return operations;
    };
    const plain = await governed(false);
    expect(plain.length).toBeGreaterThan(0);
    // Each reminder taken for a request made every step before it a past request, its work done.
    expect(await governed(true)).toEqual(plain);
  });
});

const image: ImagePart = { type: 'image', ref: 'data:image/png;base64,iVBORw0KGgo=', source: 'data' };
const ENVIRONMENT = '<environment_details>\n# Current Mode\nACT MODE\n</environment_details>';
const kinds = (ledger: Ledger, from: number) =>
  ledger.objects.filter((object) => object.messageIndex >= from).map((object) => object.id);

describe("what clients send after a step's results", () => {
  it("reads Codex's notes of an interrupted turn and of a sub-agent as outputs of the step", () => {
    const aborted = '<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>';
    const notified =
      '<subagent_notification>\n{"agent_path":"a1","status":{"completed":"done"}}\n</subagent_notification>';
    const ledger = ledgerOf([...session(1, false), userMessage(aborted), userMessage('Go on with b.py.')]);
    expect(kinds(ledger, 3)).toEqual(['function:turn_aborted:2', 'conversation:user:2']);
    expect(kinds(ledgerOf([...session(1, false), userMessage(notified)]), 3)).toEqual([
      'function:subagent_notification:2',
    ]);
    // opencode's prompt after a sub-agent's result, and a warning Codex sent about a call.
    for (const [notice, tool] of [
      ['Summarize the task tool output above and continue with your task.', 'subtask_prompt'],
      [
        'Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command.',
        'client_warning',
      ],
    ])
      expect(clientReport(userMessage(notice!))).toBe(tool);
    // Interrupted before any output, the note stays where the request is.
    expect(requests(ledgerOf([userMessage(TASK), userMessage(aborted)]))).toHaveLength(2);
  });

  it('reads the images a tool returned, sent after its result, as its output, with what comes beside them', () => {
    // Sent after the result to a provider that takes no image in one: alone, with the environment
    // details (Cline), or after opencode's words for them; the environment details may follow.
    const opencode: Message = { role: 'user', parts: [text('Attached image(s) from tool result:'), image] };
    for (const media of [
      [{ role: 'user', parts: [image, image] }],
      [{ role: 'user', parts: [image, text(ENVIRONMENT)] }],
      [opencode],
    ] as Message[][]) {
      const ledger = ledgerOf([...session(1, false), ...media, userMessage(ENVIRONMENT)]);
      expect(kinds(ledger, 3)).toEqual([`function:${MEDIA_TOOL}:2`, `function:${ENVIRONMENT_TOOL}:3`]);
      expect(requests(ledger)).toEqual(['conversation:user:1']);
    }
    // A picture the user sends is theirs: after the model's words, after the media of a step, after
    // a turn they interrupted; or beside their words.
    const theirs: Message = { role: 'user', parts: [image] };
    for (const before of [
      [assistantMessage('Send me the screenshot.')],
      [opencode],
      [userMessage('<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>')],
    ]) {
      const ledger = ledgerOf([...session(1, false), ...before, theirs]);
      expect(requests(ledger)).toEqual(['conversation:user:1', 'conversation:user:2']);
      expect(hasMilestone(ledger, ledger.messages.length - 1)).toBe(true);
    }
    expect(clientReport({ role: 'user', parts: [text('Here it is:'), image] })).toBeUndefined();
  });

  it('reads a report after instructions a client sent between, as the latest turn does', () => {
    const messages = [
      ...session(1, false),
      systemMessage('The date is now 2026-12-07.'),
      userMessage(reminder('x')),
    ];
    expect(requests(ledgerOf(messages))).toEqual(['conversation:user:1']);
  });

  it('gives back the images a fold of them took, as marks: what text can hold of them', async () => {
    const messages: Message[] = [
      ...session(1, false),
      { role: 'user', parts: [text('Attached image(s) from tool result:'), image, image] },
      assistantMessage('The screenshot shows the error.'),
      userMessage('Fix it.'),
    ];
    const { governor } = await storedGovernor();
    const applied = await governor.applyAgentPlan('s', messages, {
      planner: 'agent',
      operations: [{ objectId: `function:${MEDIA_TOOL}:2`, operation: 'fold', reason: 'test' }],
    });
    expect(applied.rejected).toEqual([]);
    expect(await governor.expand('s', applied.accepted[0]!.key)).toBe(
      'Attached image(s) from tool result:\n[image]\n[image]',
    );
  });
});

describe("a client's answer to the model's words", () => {
  it('is an output of the step the words ended, no request: the work goes on in the task', () => {
    const replies = [
      '[ERROR] You did not use a tool in your previous response! Please retry with a tool use.\n\n# Next Steps\n',
      'Output token limit hit. Resume directly, with no recap.',
      'Your response was cut off because it exceeded the output token limit. Continue from where you left off.',
      '[Your previous response had no visible output. Please continue and produce a user-visible response.]',
      'Stop hook feedback:\nnpm test failed: 2 tests',
    ];
    for (const reply of replies) {
      const messages = [
        ...session(1, false),
        assistantMessage('All handlers read their code now.'),
        { role: 'user' as const, parts: [text(reply), text(ENVIRONMENT)] },
        ...toolRound('next', 'Read', { file_path: '/w/m9.py' }, moduleSource(9, 10)),
      ];
      const ledger = ledgerOf(messages);
      expect(requests(ledger), reply).toEqual(['conversation:user:1']);
      expect(ledger.objectsByMessage.get(4)![0]!.id).toMatch(
        /^function:(no_tool_used|continue_prompt|hook_feedback):2$/,
      );
      // The latest turn is the model's words and the answer to them.
      const answered = messages.slice(0, 5);
      expect(turnStartOf(answered, (index) => carriesOutput(ledgerOf(answered), index))).toBe(3);
    }
    // Beside a reply, a reminder that carries what the user sent meanwhile, or names a file it
    // attaches, is theirs, as after a step's results.
    const feedback = text('Stop hook feedback:\nnpm test failed: 2 tests');
    for (const beside of [
      [reminder('The user sent the following message:\nAlso keep the old names.')],
      [
        reminder('Called the Read tool with the following input: {"file_path":"/w/spec.md"}'),
        reminder(`Result of calling the Read tool:\n${moduleSource(7, 5)}`),
      ],
    ])
      expect(
        clientReply({ role: 'user', parts: [feedback, ...beside.map((each) => text(each))] }),
      ).toBeUndefined();
    expect(clientReply({ role: 'user', parts: [feedback, text(reminder('Tasks: none.'))] })).toBe(
      'hook_feedback',
    );
    // The user's own words after the model's, even about the same, are a request.
    expect(clientReply(userMessage('Why did you stop? Output token limit hit?'))).toBeUndefined();
    expect(
      clientReply({ role: 'user', parts: [text('Stop hook feedback:\nx'), text('and fix the docs')] }),
    ).toBeUndefined();
    // After outputs, the model has not spoken: a reply's words there are not one.
    expect(
      requests(ledgerOf([...session(1, false), userMessage('Output token limit hit. Resume.')])),
    ).toHaveLength(2);
  });
});

/** The view `messages` get from a store that holds `objects` under numbering `ids`, as JSON. */
async function viewUnder(messages: Message[], objects: ViewState, ids: number): Promise<string> {
  const { governor } = await storedGovernor({ ...olderState(ledgerOf(messages), objects), ids });
  return JSON.stringify((await governor.project('s', messages)).view);
}

describe('a state written under a numbering that took them for requests', () => {
  const messages = [...session(3), userMessage('Now add a test.'), assistantMessage('On it.')];
  const ledger = ledgerOf(messages);
  const bound = (end: number) => ({ end, link: ledger.chain[end - 1]! });
  const pruned = (id: string, end: number): ObjectState => ({
    operation: 'prune',
    replacement: `[pruned ${id}]`,
    commitId: 'old',
    binding: bound(end),
  });
  const underIds = (ids: number | undefined, objects: Record<string, ObjectState>): SessionState => ({
    ...olderState(ledger, objects),
    ...(ids === undefined ? {} : { ids }),
  });

  it('leaves out what it bound under an id past the first reminder, and keeps what it bound before', async () => {
    // Version 3 took each reminder for a request: its second request was the first reminder.
    expect(ledger.get('conversation:user:2')!.span.start).toBe(10);
    expect(ledger.get('function:Read:1')!.messageIndex).toBe(2);
    const state = underIds(3, {
      'function:Read:1': pruned('function:Read:1', 3),
      'conversation:user:2': pruned('conversation:user:2', 12),
    });
    const { governor } = await storedGovernor(state);
    const governed = await governor.project('s', messages);
    const shown = JSON.stringify(governed.view);
    expect(shown).toContain('[pruned function:Read:1]');
    expect(shown).not.toContain('[pruned conversation:user:2]');
    const warning = governed.warnings.find((each) => each.code === 'transcript-diverged');
    expect(warning?.messageIndex).toBe(3);
    // Under this numbering, and under 4 which read reminders so, the same state holds whole.
    for (const ids of [LEDGER_IDS, 4]) {
      const current = await storedGovernor(underIds(ids, state.objects));
      expect(JSON.stringify((await current.governor.project('s', messages)).view)).toContain(
        '[pruned conversation:user:2]',
      );
    }
  });

  it("keeps a version 3 state whole where no reminder follows a step's results", async () => {
    // Version 3 already counted environment reports: a session of them numbers alike in both.
    const reported = messages.map((message) =>
      message.role === 'user' &&
      message.parts[0]?.type === 'text' &&
      message.parts[0].text.startsWith('<system')
        ? userMessage('<environment_details>\n# Current Mode\nACT MODE\n</environment_details>')
        : message,
    );
    const reportedLedger = ledgerOf(reported);
    expect(requests(reportedLedger)).toEqual(['conversation:user:1', 'conversation:user:2']);
    const state: SessionState = {
      ...olderState(reportedLedger, {
        'conversation:user:2': {
          operation: 'prune',
          replacement: '[pruned conversation:user:2]',
          commitId: 'old',
          binding: { end: 12, link: reportedLedger.chain[11]! },
        },
      }),
      ids: 3,
    };
    const governed = await (await storedGovernor(state)).governor.project('s', reported);
    expect(JSON.stringify(governed.view)).toContain('[pruned conversation:user:2]');
    expect(governed.warnings.map((each) => each.code)).not.toContain('transcript-diverged');
    // A state without the numbering at all still drops it there: environment reports came in 3.
    const older = await (await storedGovernor({ ...state, ids: 2 })).governor.project('s', reported);
    expect(JSON.stringify(older.view)).not.toContain('[pruned conversation:user:2]');
  });

  it('leaves out what a state under numbering 4 bound under an id past the first note of Codex', async () => {
    const aborted = '<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>';
    const codex = [
      ...session(1, false),
      userMessage(aborted),
      userMessage('Go on with b.py.'),
      assistantMessage('On it.'),
    ];
    const codexLedger = ledgerOf(codex);
    expect(codexLedger.get('conversation:user:2')!.span.start).toBe(4);
    const objects = {
      'conversation:user:2': {
        operation: 'prune' as const,
        replacement: '[pruned conversation:user:2]',
        commitId: 'old',
        binding: { end: 6, link: codexLedger.chain[5]! },
      },
    };
    expect(await viewUnder(codex, objects, 4)).not.toContain('[pruned conversation:user:2]');
    expect(await viewUnder(codex, objects, LEDGER_IDS)).toContain('[pruned conversation:user:2]');
  });

  it('leaves out what a state under numbering 4 bound past a reminder it read only after a tool message', async () => {
    // Numbering 4 read a reminder as an output only right after a tool message: after instructions
    // it took one for a request, and the files the next request attaches were numbered one lower.
    const called = (path: string) =>
      `<system-reminder>\nCalled the Read tool with the following input: {"file_path":"/w/${path}"}\n</system-reminder>\n`;
    const result = (body: string) =>
      `<system-reminder>\nResult of calling the Read tool:\n${body}\n</system-reminder>\n`;
    const late = [
      ...session(1, false),
      systemMessage('The date is now 2026-12-07.'),
      userMessage(reminder('The task tools have not been used recently.')),
      assistantMessage('Read both.'),
      {
        role: 'user' as const,
        parts: [
          text(called('a.py')),
          text(result(moduleSource(501, 40))),
          text(called('b.py')),
          text(result(moduleSource(702, 40))),
          text('Compare.'),
        ],
      },
      assistantMessage('Comparing.'),
    ];
    const lateLedger = ledgerOf(late);
    // Numbering 4's function:Read:3 was the b.py read; here it is the a.py read, in the same message.
    expect(lateLedger.get('function:Read:3')!.callArguments).toContain('a.py');
    const binding = { end: 7, link: lateLedger.chain[6]! };
    const state: SessionState = {
      ...olderState(lateLedger, {
        'function:Read:3': {
          operation: 'fold',
          replacement: '[folded function:Read:3: Read /w/b.py]',
          commitId: 'old',
          binding,
        },
      }),
      ids: 4,
    };
    const governed = await (await storedGovernor(state)).governor.project('s', late);
    expect(JSON.stringify(governed.view)).not.toContain('Read /w/b.py]');
    expect(governed.warnings.find((each) => each.code === 'transcript-diverged')?.messageIndex).toBe(4);
  });

  it("leaves a development build's numbering nothing past the second request or the first output sent inside the work", async () => {
    // Builds that wrote numbering 5 read some messages otherwise than this one, both ways: a
    // state under it holds only where every build agrees.
    const messages = [
      ...session(2, false),
      assistantMessage('Both read.'),
      userMessage('Now add a test.'),
      ...toolRound('t', 'Read', { file_path: '/w/t.py' }, moduleSource(7, 10)),
      userMessage(reminder('The task tools have not been used recently.')),
      assistantMessage('Added.'),
    ];
    const ledger = ledgerOf(messages);
    expect(ledger.get('conversation:user:2')!.messageIndex).toBe(6);
    const fold = (id: string, end: number): ObjectState => ({
      operation: 'fold',
      replacement: `[folded ${id}]`,
      commitId: 'old',
      binding: { end, link: ledger.chain[end - 1]! },
    });
    const objects = {
      'function:Read:1': fold('function:Read:1', 3),
      'function:Read:3': fold('function:Read:3', 9),
    };
    const underFive = await viewUnder(messages, objects, 5);
    expect(underFive).toContain('[folded function:Read:1]');
    expect(underFive).not.toContain('[folded function:Read:3]');
    expect(await viewUnder(messages, objects, LEDGER_IDS)).toContain('[folded function:Read:3]');
  });
});
