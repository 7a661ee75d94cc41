/**
 * Text-protocol clients (mini-swe-agent, Cline, Roo Code) send a command's output as a user
 * message. Such an observation is a tool output inside the request it serves, not a request.
 */
import { describe, expect, it } from 'vitest';
import { hasMilestone } from './governor/triggers.js';
import {
  carriesOutput,
  clientObservation,
  countMessageTokens,
  indexTranscript,
  textToolUses,
} from './ledger.js';
import { objectPayload, payloadText } from './object-payload.js';
import { projectView } from './project-view.js';
import { latestTurnStart, rehearsePlan } from './rehearse-plan.js';
import { assistantMessage, systemMessage, userMessage } from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';
import type { Message } from './transcript.js';

const step = (thought: string, command: string) =>
  assistantMessage(`THOUGHT: ${thought}\n\n\`\`\`bash\n${command}\n\`\`\``);
const observation = (code: number, output: string) =>
  userMessage(`<returncode>${code}</returncode>\n<output>\n${output}\n</output>`);

/** A mini-swe-agent session in its own shape: commands in bash blocks, outputs as user messages. */
function miniSweSession(): Message[] {
  return [
    systemMessage('You are a helpful assistant that can interact with a computer.'),
    userMessage('<pr_description>separability_matrix is wrong for nested models</pr_description>'),
    step('Find the module.', 'grep -rn "def separability_matrix" astropy/'),
    observation(0, 'astropy/modeling/separable.py:66:def separability_matrix(transform):'),
    step('Read it.', 'sed -n 60,120p astropy/modeling/separable.py'),
    observation(
      0,
      Array.from({ length: 40 }, (_, line) => `    line_${line} = _cstack(left_${line}, right)`).join('\n'),
    ),
    step('Run the reproduction.', 'python repro.py'),
    observation(1, 'Traceback (most recent call last):\nValueError: shapes mismatch in _cstack'),
    assistantMessage('THOUGHT: Fix `_cstack` next.'),
  ];
}

const ledgerOf = (messages: Message[]) =>
  indexTranscript(messages, { tokenCounter: approximateTokenCounter });

describe('clientObservation', () => {
  it("reads mini-swe-agent's observation, with the command of the step before", () => {
    expect(clientObservation(observation(0, 'ok'), step('List.', 'ls -la'))).toEqual({
      toolName: 'bash',
      callArguments: JSON.stringify({ command: 'ls -la' }),
    });
  });

  it("reads mini-swe-agent's timeout notice and SWE-agent's observation, with the command", () => {
    const timeout = userMessage(
      'The last command <command>pytest -x</command> timed out and has been killed.\nThe output of the command was:\n <output>\n\n</output>',
    );
    expect(clientObservation(timeout, step('Test.', 'pytest -x'))?.toolName).toBe('bash');
    const sweAgent = userMessage(
      'File: /testbed/setup.py (40 lines total)]\n1:import setuptools\n(Open file: /testbed/setup.py)\n(Current directory: /testbed)\nbash-$',
    );
    expect(
      clientObservation(sweAgent, assistantMessage('DISCUSSION\nOpen it.\n\n```\nopen setup.py\n```')),
    ).toEqual({
      toolName: 'bash',
      callArguments: JSON.stringify({ command: 'open setup.py' }),
    });
  });

  it("reads Cline's and Roo Code's tool results, with the call the agent wrote or their target", () => {
    const result: Message = {
      role: 'user',
      parts: [
        { type: 'text', text: "[read_file for 'src/app.ts'] Result:" },
        { type: 'text', text: 'export const app = 1;' },
        { type: 'text', text: '<environment_details>\n# Current Time\n</environment_details>' },
      ],
    };
    expect(
      clientObservation(result, assistantMessage('<read_file><path>src/app.ts</path></read_file>')),
    ).toEqual({ toolName: 'read_file', callArguments: JSON.stringify({ path: 'src/app.ts' }) });
    const command = assistantMessage(
      '<thinking>\nRun the tests.\n</thinking>\n\n<execute_command>\n<command>npm test -- --run</command>\n<requires_approval>false</requires_approval>\n</execute_command>',
    );
    expect(
      clientObservation(userMessage("[execute_command for 'npm test -- --run'] Result:\nok"), command),
    ).toEqual({
      toolName: 'execute_command',
      callArguments: JSON.stringify({ command: 'npm test -- --run', requires_approval: 'false' }),
    });
    // No call of that tool in the agent's text: the target the result names.
    expect(clientObservation(userMessage("[list_files for 'src'] Result:\na.ts"), command)).toEqual({
      toolName: 'list_files',
      callArguments: JSON.stringify({ target: 'src' }),
    });
    expect(
      clientObservation(
        userMessage('[attempt_completion] Result: Done.'),
        assistantMessage('<attempt_completion/>'),
      ),
    ).toEqual({ toolName: 'attempt_completion' });
    // Roo Code's read of several files: the target the result names says more than one path.
    const read = assistantMessage(
      '<read_file>\n<args>\n<file><path>a.ts</path></file>\n<file><path>b.ts</path></file>\n</args>\n</read_file>',
    );
    expect(clientObservation(userMessage("[read_file for 'a.ts', 'b.ts'] Result:\n…"), read)).toEqual({
      toolName: 'read_file',
      callArguments: JSON.stringify({ target: "'a.ts', 'b.ts'" }),
    });
    expect(clientObservation(userMessage('[read_file for 3 files] Result:\n…'), read)).toEqual({
      toolName: 'read_file',
      callArguments: JSON.stringify({ target: '3 files' }),
    });
    // Two uses in one message: the client ran the first, which the result names.
    const two = assistantMessage(
      '<read_file>\n<path>a.ts</path>\n</read_file>\n\n<read_file>\n<path>b.ts</path>\n</read_file>',
    );
    expect(clientObservation(userMessage("[read_file for 'a.ts'] Result:\n…"), two)).toEqual({
      toolName: 'read_file',
      callArguments: JSON.stringify({ path: 'a.ts' }),
    });
  });

  it("reads only the known tools' XML, at the start of a line, with their parameters of one line", () => {
    const text = [
      '<thinking>\nI could run <command>rm -rf build</command> but will not.\n</thinking>',
      'I changed the nav:\n<ul>\n<li>Dashboard overview page</li>\n</ul>',
      'Then, in passing, <execute_command><command>ls</command></execute_command> mid-line.',
      '<write_to_file>\n<path>src/app.ts</path>\n<content>\nexport const app = 1;\n</content>\n</write_to_file>',
      '<execute_command>\n<command>npm test</command>\n<command>npm run lint</command>\n</execute_command>',
    ].join('\n');
    expect(textToolUses(text)).toEqual([
      { name: 'write_to_file', parameters: { path: 'src/app.ts' } },
      { name: 'execute_command', parameters: { command: 'npm test' } },
    ]);
    // A tool's tag never closed is looked for once, whatever follows it.
    expect(textToolUses(`${'<read_file>\n'.repeat(5)}</x>`)).toEqual([]);
  });

  it('leaves a result carrying what the user said, and messages of other shapes, to be requests', () => {
    const call = assistantMessage('<write_to_file><path>a.ts</path></write_to_file>');
    expect(
      clientObservation(
        userMessage(
          "[write_to_file for 'a.ts'] Result:\nThe user denied this operation.\n<feedback>\nuse b.ts\n</feedback>",
        ),
        call,
      ),
    ).toBeUndefined();
    expect(clientObservation(userMessage('please also fix the tests'), call)).toBeUndefined();
    // Output-shaped text that does not answer an agent's message is the user's.
    expect(clientObservation(observation(0, 'pasted'), userMessage('see this'))).toBeUndefined();
    expect(clientObservation(observation(0, 'pasted'), undefined)).toBeUndefined();
  });
});

describe('the ledger of a text-protocol session', () => {
  it('makes each observation a tool output inside the request it serves', () => {
    const ledger = ledgerOf(miniSweSession());
    expect(ledger.objects.map((object) => object.id)).toEqual([
      'system:1',
      'conversation:user:1',
      'function:bash:1',
      'function:bash:2',
      'function:bash:3',
    ]);
    const request = ledger.get('conversation:user:1')!;
    expect(request.span).toEqual({ start: 1, end: 9 });
    expect(request.pinned).toBe(true);
    const read = ledger.get('function:bash:2')!;
    expect(read).toMatchObject({
      kind: 'function',
      messageIndex: 5,
      callMessageIndex: 4,
      toolName: 'bash',
      callArguments: JSON.stringify({ command: 'sed -n 60,120p astropy/modeling/separable.py' }),
      isError: false,
      tokens: (ledger.messageTokens[5] ?? 0) - 4,
    });
    expect(read.partIndex).toBeUndefined();
    expect(ledger.get('function:bash:3')?.isError).toBe(true);
    expect([3, 5, 7].every((index) => carriesOutput(ledger, index))).toBe(true);
    expect([1, 2, 8].some((index) => carriesOutput(ledger, index))).toBe(false);
  });

  it('counts only what the agent and the user wrote as use, not what an observation echoes', () => {
    const ledger = ledgerOf(miniSweSession());
    // The read's output names `_cstack`; the traceback echoing it is no use of it, the agent's step is.
    expect(ledger.get('function:bash:2')!.references).toEqual([8]);
    expect(ledger.spokenAnchors.has('astropy/modeling/separable.py')).toBe(true);
    expect(ledger.spokenAnchors.has('ValueError')).toBe(false);
  });

  it('keeps the latest step and its observation as the latest turn, and an observation is no new request', () => {
    const messages = miniSweSession().slice(0, 8);
    const ledger = ledgerOf(messages);
    expect(latestTurnStart(ledger)).toBe(6);
    expect(hasMilestone(ledger, 2)).toBe(false);
    const asked = ledgerOf([...messages, assistantMessage('Done?'), userMessage('yes, and add a test')]);
    expect(hasMilestone(asked, 2)).toBe(true);
  });
});

describe('operations on an observation', () => {
  const operate = (messages: Message[], operations: Array<Record<string, unknown>>) => {
    const ledger = ledgerOf(messages);
    const rehearsal = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: operations.map((operation) => ({ reason: 'test', ...operation })) as never,
      },
    );
    expect(rehearsal.rejected).toEqual([]);
    return { ledger, view: projectView(ledger, rehearsal.stateAfter) };
  };
  const viewTokens = (items: ReturnType<typeof projectView>['items']) =>
    items.reduce((sum, item) => sum + countMessageTokens(approximateTokenCounter, item.message), 0);

  it('folds it in place: the user message holds the fold, with the command and a recovery pointer', () => {
    const { ledger, view } = operate(miniSweSession(), [{ objectId: 'function:bash:2', operation: 'fold' }]);
    const folded = view.items.find((item) => item.source === 5)!;
    expect(folded.changed).toBe(true);
    expect(folded.message.role).toBe('user');
    expect(folded.message.parts).toHaveLength(1);
    const text = folded.message.parts[0]?.type === 'text' ? folded.message.parts[0].text : '';
    expect(text).toMatch(
      /^\[folded function:bash:2: bash command=sed -n 60,120p astropy\/modeling\/separable\.py → ok/,
    );
    expect(text).toContain('expand("function:bash:2")');
    expect(view.items.map((item) => item.source)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(view.tokens).toBe(viewTokens(view.items));
    expect(view.tokens).toBeLessThan(ledger.totalTokens);
  });

  it('prunes it with its shell: the step that wrote the command leaves with it, and the turns still alternate', () => {
    const { view } = operate(miniSweSession(), [
      { objectId: 'function:bash:2', operation: 'prune', dropShell: true },
    ]);
    expect(view.items.map((item) => item.source)).toEqual([0, 1, 2, 3, 6, 7, 8]);
    expect(view.tokens).toBe(viewTokens(view.items));
  });

  it('prunes it to a tombstone that keeps the message', () => {
    const { view } = operate(miniSweSession(), [{ objectId: 'function:bash:1', operation: 'prune' }]);
    const pruned = view.items.find((item) => item.source === 3)!;
    expect(pruned.message).toEqual(
      userMessage(
        expect.stringMatching(/^\[pruned function:bash:1: bash command=grep -rn/) as unknown as string,
      ),
    );
  });

  it('masks a long one, as a tool result', () => {
    const { view } = operate(miniSweSession(), [{ objectId: 'function:bash:2', operation: 'mask' }]);
    const masked = view.items.find((item) => item.source === 5)!.message;
    const text = masked.parts[0]?.type === 'text' ? masked.parts[0].text : '';
    expect(text.startsWith('<returncode>0</returncode>')).toBe(true);
    expect(text).toContain('lines masked (function:bash:2');
  });

  it('tags it with its id when ids are shown', () => {
    const ledger = ledgerOf(miniSweSession());
    const item = projectView(ledger, {}, { showIds: true }).items.find((entry) => entry.source === 3)!;
    expect(item.message.parts.at(-1)).toEqual({ type: 'text', text: '[id: function:bash:1]' });
  });

  it('never ends a span fold between a command and its observation', () => {
    const ledger = ledgerOf(miniSweSession());
    const rehearsal = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: [{ objectId: 'conversation:user:1', operation: 'fold', spanEnd: 5, reason: 'test' }],
      },
    );
    // Asked to end before the read's output (message 5), the fold ends before the read's step.
    expect(rehearsal.stateAfter['conversation:user:1']?.spanEnd).toBe(4);
    const view = projectView(ledger, rehearsal.stateAfter);
    expect(view.items.map((item) => item.source)).toEqual([0, 1, 1, 4, 5, 6, 7, 8]);
  });

  it('keeps the exact message in the payload, and the step that wrote the command', () => {
    const ledger = ledgerOf(miniSweSession());
    const payload = objectPayload(ledger, ledger.get('function:bash:3')!);
    expect(payload).toMatchObject({ kind: 'function', messageIndex: 7, message: ledger.messages[7] });
    expect(payload.kind === 'function' && payload.shell?.messageIndex).toBe(6);
    expect(payloadText(payload)).toContain('ValueError: shapes mismatch');
  });
});
