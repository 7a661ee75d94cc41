import { describe, expect, it } from 'vitest';
import type { ScriptedRequest } from '../src/testing/index.js';
import { AGENT_CLIS } from './agent-clis.js';
import {
  createScenario,
  type DelegateStep,
  expectedAnswer,
  type FileStep,
  type ScenarioRun,
} from './agent-scenarios.js';
import { createScriptedAgent } from './scripted-agent.js';

/** The path of a run's file step. */
function pathOf(of: ScenarioRun, index: number): string {
  return (of.steps[index] as FileStep).path;
}

const scenario = createScenario('streaming-recovery');
const run = scenario.runs[0]!;
const agent = createScriptedAgent({ tools: AGENT_CLIS['claude-code'].tools, project: '/p', run: () => run });
const loopTools = [
  { name: 'Read', input_schema: {} },
  { name: 'Bash', input_schema: {} },
];

/** A Messages request of the agent loop as the scripted upstream gets it. */
function messagesRequest(messages: unknown[], tools: unknown[] = loopTools): ScriptedRequest {
  return {
    index: 0,
    method: 'POST',
    path: '/v1/messages',
    headers: {},
    body: { model: 'claude', max_tokens: 100, tools, messages },
    rawBody: '',
  };
}

function ask(messages: unknown[], tools: unknown[] = loopTools) {
  return agent(messagesRequest(messages, tools));
}

const prompt = { role: 'user', content: run.prompt };
const stepCall = (id: string) => ({ type: 'tool_use', id, name: 'Bash', input: { command: 'cat x' } });
const stepResult = (id: string, text: string) => ({
  role: 'user',
  content: [{ type: 'tool_result', tool_use_id: id, content: [{ type: 'text', text }] }],
});
/** The conversation after the last step, with the first step folded behind a pointer. */
const afterLastStep = [
  prompt,
  { role: 'user', content: '[folded: notes/secret.txt and 7 more, expand("conversation:user:1@4")]' },
  { role: 'assistant', content: [stepCall('toolu_last')] },
  stepResult('toolu_last', run.files[pathOf(run, run.steps.length - 1)]!),
];

describe('the scripted agent', () => {
  it('starts with the first step, using the CLI tool for it', () => {
    expect(ask([prompt]).toolCalls).toEqual([
      { name: 'Read', arguments: { file_path: `/p/${pathOf(run, 0)}` } },
    ]);
  });

  it('takes the step after the one the latest tool result shows', () => {
    const reply = ask([
      prompt,
      { role: 'assistant', content: [stepCall('toolu_3')] },
      stepResult('toolu_3', run.files[pathOf(run, 2)]!),
    ]);
    expect(reply.toolCalls).toEqual([
      { name: 'Bash', arguments: { command: `cat ${pathOf(run, 3)}`, description: 'Show a note' } },
    ]);
  });

  it('answers a side request (no loop tools) with plain text', () => {
    expect(ask([prompt], [])).toEqual({ text: 'E2E notes' });
  });

  it('opens a Messages answer with thinking when the request turns it on, empty when it asks it omitted', () => {
    const thinking = (value: unknown, path = '/v1/messages') =>
      agent({
        ...messagesRequest([prompt]),
        path,
        body: { model: 'claude', thinking: value, messages: [prompt] },
      }).thinking;
    // Claude Code's request with `-p`: adaptive, its text omitted, so the API sends only a signature.
    expect(thinking({ type: 'adaptive', display: 'omitted' })).toBe('');
    expect(thinking({ type: 'adaptive' })).toMatch(/\S/);
    expect(thinking({ type: 'enabled', budget_tokens: 1024 })).toMatch(/\S/);
    expect(thinking({ type: 'disabled' })).toBeUndefined();
    expect(thinking(undefined)).toBeUndefined();
    expect(thinking(null)).toBeUndefined();
    // Only Messages answers think.
    expect(thinking({ type: 'enabled', budget_tokens: 1024 }, '/v1/chat/completions')).toBeUndefined();
    // The step it takes is the same, with thinking or without.
    const withThinking = agent({
      ...messagesRequest([prompt]),
      body: {
        model: 'claude',
        tools: loopTools,
        thinking: { type: 'adaptive', display: 'omitted' },
        messages: [prompt],
      },
    });
    expect(withThinking).toEqual({ ...ask([prompt]), thinking: '' });
  });

  it('answers a Messages request whose body is not an object without throwing', () => {
    expect(() => agent({ ...messagesRequest([prompt]), body: null })).not.toThrow();
  });

  it('follows the recovery pointer near the file it needs when the proxy offers selfgc_expand', () => {
    const reply = ask(afterLastStep, [...loopTools, { name: 'selfgc_expand', input_schema: {} }]);
    expect(reply.toolCalls).toEqual([{ name: 'selfgc_expand', arguments: { id: 'conversation:user:1@4' } }]);
  });

  it('says it failed when the value is gone and nothing recovers it', () => {
    expect(ask(afterLastStep).text).toBe(
      'E2E-FAILED the value from notes/secret.txt is gone from the context and the request offers no recovery tool',
    );
  });

  it('answers with the recovered value once the expand result comes back', () => {
    const expandCall = {
      type: 'tool_use',
      id: 'toolu_x',
      name: 'selfgc_expand',
      input: { id: 'conversation:user:1@4' },
    };
    const reply = ask([
      ...afterLastStep,
      { role: 'assistant', content: [expandCall] },
      stepResult('toolu_x', run.files[pathOf(run, 0)]!),
    ]);
    expect(reply.text).toBe(expectedAnswer(run));
  });

  it('reads on from the offset a page names when the page ends before the value', () => {
    const file = run.files[pathOf(run, 0)]!;
    const cut = file.indexOf('The release code is');
    const expandCall = (id: string, input: Record<string, unknown>) => ({
      role: 'assistant',
      content: [{ type: 'tool_use', id, name: 'selfgc_expand', input }],
    });
    const pointer = 'conversation:user:1@4';
    const firstPage = `${file.slice(0, cut)}\n[selfgc: characters 0–${cut} of ${file.length} of ${pointer}. Call selfgc_expand with {"id": "${pointer}", "offset": ${cut}} for the next page.]`;
    const tools = [...loopTools, { name: 'selfgc_expand', input_schema: {} }];
    const onFirstPage = [
      ...afterLastStep,
      expandCall('toolu_p1', { id: pointer }),
      stepResult('toolu_p1', firstPage),
    ];
    expect(ask(onFirstPage, tools).toolCalls).toEqual([
      { name: 'selfgc_expand', arguments: { id: pointer, offset: cut } },
    ]);
    const secondPage = `${file.slice(cut)}\n[selfgc: characters ${cut}–${file.length} of ${file.length} of ${pointer}. This is the last page.]`;
    const reply = ask(
      [
        ...onFirstPage,
        expandCall('toolu_p2', { id: pointer, offset: cut }),
        stepResult('toolu_p2', secondPage),
      ],
      tools,
    );
    // The run marker is on the first page only: the answer still names it.
    expect(reply.text).toBe(expectedAnswer(run));
  });

  it('asks for the value of the first step at once in a resumed conversation, not for its steps again', () => {
    const [first, resumed] = createScenario('resume').runs;
    // The first run ends with the token and never asks for the secret; the second goes on in
    // its conversation, with its files, and must end with the secret.
    expect(first!.secret).toBeUndefined();
    expect(first!.continues).toBeUndefined();
    expect(resumed).toMatchObject({ continues: true, marker: first!.marker, files: first!.files });
    expect(resumed!.secret).toBeDefined();
    expect(first!.files[pathOf(first!, 0)]).toContain(resumed!.secret);
    const resumedAgent = createScriptedAgent({
      tools: AGENT_CLIS['claude-code'].tools,
      project: '/p',
      run: () => resumed!,
    });
    const tools = [...loopTools, { name: 'selfgc_expand', input_schema: {} }];
    const request = messagesRequest(
      [
        ...afterLastStep,
        { role: 'assistant', content: [{ type: 'text', text: 'E2E-DONE …' }] },
        { role: 'user', content: resumed!.prompt },
      ],
      tools,
    );
    expect(resumedAgent(request).toolCalls).toEqual([
      { name: 'selfgc_expand', arguments: { id: 'conversation:user:1@4' } },
    ]);
  });

  it('takes its own steps in a resumed conversation that it goes on with a task of its own', () => {
    const [first, rewound] = createScenario('rewound-resume').runs;
    const [, fork] = createScenario('forked-resume').runs;
    expect(rewound).toMatchObject({ continues: true, rewindTo: 4 });
    expect(rewound!.secret).toBeUndefined();
    const agentFor = (of: ScenarioRun) =>
      createScriptedAgent({ tools: AGENT_CLIS['claude-code'].tools, project: '/p', run: () => of });
    const readOwn = (of: ScenarioRun, index: number) => ({
      name: 'Read',
      arguments: { file_path: `/p/${pathOf(of, index)}` },
    });
    const task = [{ role: 'user', content: first!.prompt }];
    // Cut back to the fourth step's result: the new prompt goes in the turn that holds it.
    const cutBack = [
      ...task,
      { role: 'assistant', content: [stepCall('toolu_4')] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_4', content: first!.files[pathOf(first!, 3)]! },
          { type: 'text', text: rewound!.prompt },
        ],
      },
    ];
    expect(agentFor(rewound!)(messagesRequest(cutBack)).toolCalls).toEqual([readOwn(rewound!, 0)]);
    // The same request read as the task's own run goes on with the task's fifth step.
    expect(agentFor(first!)(messagesRequest(cutBack)).toolCalls).toEqual([readOwn(first!, 4)]);
    const afterOwnStep = [
      ...cutBack,
      { role: 'assistant', content: [stepCall('toolu_a1')] },
      stepResult('toolu_a1', rewound!.files[pathOf(rewound!, 0)]!),
    ];
    expect(agentFor(rewound!)(messagesRequest(afterOwnStep)).toolCalls?.[0]?.arguments).toMatchObject({
      command: `cat ${pathOf(rewound!, 1)}`,
    });
    // A fork goes on after the finished task's answer with its own first step, not the recovery.
    const finished = [
      ...task,
      { role: 'assistant', content: [{ type: 'text', text: expectedAnswer(first!) }] },
      { role: 'user', content: fork!.prompt },
    ];
    expect(agentFor(fork!)(messagesRequest(finished)).toolCalls).toEqual([readOwn(fork!, 0)]);
  });

  it('ends a plain run with the marker and the last token it saw', () => {
    const plain = createScenario('long-task').runs[0]!;
    const plainAgent = createScriptedAgent({
      tools: AGENT_CLIS.codex.tools,
      project: '/p',
      run: () => plain,
    });
    const last = plain.steps.length - 1;
    const request: ScriptedRequest = {
      index: 0,
      method: 'POST',
      path: '/v1/responses',
      headers: {},
      body: {
        model: 'gpt',
        tools: [{ type: 'function', name: 'exec_command', parameters: {} }],
        input: [
          { type: 'message', role: 'user', content: plain.prompt },
          { type: 'function_call', call_id: 'c', name: 'exec_command', arguments: '{}' },
          {
            type: 'function_call_output',
            call_id: 'c',
            output: `Output:\n${plain.files[pathOf(plain, last)]}`,
          },
        ],
      },
      rawBody: '',
    };
    expect(plainAgent(request)).toEqual({ text: expectedAnswer(plain) });
  });

  it('asks for two steps in one turn in parallel-reads, and goes on after the later of their results', () => {
    const parallel = createScenario('parallel-reads').runs[0]!;
    const parallelAgent = createScriptedAgent({
      tools: AGENT_CLIS['claude-code'].tools,
      project: '/p',
      run: () => parallel,
    });
    const read = (index: number) => ({
      name: 'Read',
      arguments: { file_path: `/p/${pathOf(parallel, index)}` },
    });
    const cat = (index: number) => ({
      name: 'Bash',
      arguments: { command: `cat ${pathOf(parallel, index)}`, description: 'Show a note' },
    });
    const first = { role: 'user', content: parallel.prompt };
    expect(parallelAgent(messagesRequest([first])).toolCalls).toEqual([read(0), cat(1)]);
    // Both results in one message, in either order: the next pair starts after the later step.
    const both = {
      role: 'user',
      content: [1, 0].map((index) => ({
        type: 'tool_result',
        tool_use_id: `toolu_${index}`,
        content: [{ type: 'text', text: parallel.files[pathOf(parallel, index)]! }],
      })),
    };
    const calls = { role: 'assistant', content: [stepCall('toolu_0'), stepCall('toolu_1')] };
    expect(parallelAgent(messagesRequest([first, calls, both])).toolCalls).toEqual([read(2), cat(3)]);
    // Fifteen steps: the last turn asks for the last step alone.
    const last = parallel.steps.length - 1;
    const beforeLast = stepResult('toolu_13', parallel.files[pathOf(parallel, last - 1)]!);
    expect(parallelAgent(messagesRequest([first, calls, beforeLast])).toolCalls).toEqual([read(last)]);
  });

  describe('with a subagent', () => {
    const delegating = createScenario('subagent').runs[0]!;
    const delegatingAgent = createScriptedAgent({
      tools: AGENT_CLIS['claude-code'].tools,
      project: '/p',
      run: () => delegating,
    });
    const delegate = delegating.steps.at(-1) as DelegateStep;
    const call = (id: string, name: string) => ({ type: 'tool_use', id, name, input: {} });
    const ask = (messages: unknown[]) => delegatingAgent(messagesRequest(messages));

    it('hands the last step to a subagent with the agent tool, after its own steps', () => {
      const seventh = delegating.files[pathOf(delegating, 6)]!;
      const reply = ask([
        { role: 'user', content: delegating.prompt },
        { role: 'assistant', content: [call('t7', 'Read')] },
        stepResult('t7', seventh),
      ]);
      expect(reply.toolCalls).toEqual([
        {
          name: 'Agent',
          arguments: { description: 'Read the sub notes', prompt: delegate.prompt, run_in_background: false },
        },
      ]);
      // Only the subagent's files hold the token the run must end with.
      expect(delegating.files[delegate.steps.at(-1)!.path]).toContain(delegating.lastToken);
    });

    it("plays the subagent's own conversation, then reports with the parent's step", () => {
      const opening = { role: 'user', content: [{ type: 'text', text: delegate.prompt }] };
      expect(ask([opening]).toolCalls).toEqual([
        { name: 'Read', arguments: { file_path: `/p/${delegate.steps[0]!.path}` } },
      ]);
      const lastFile = delegating.files[delegate.steps.at(-1)!.path]!;
      const report = ask([
        opening,
        { role: 'assistant', content: [call('s4', 'Bash')] },
        stepResult('s4', lastFile),
      ]);
      expect(report.text).toBe(`E2E-SUBDONE E2E-STEP-08 ${delegating.marker} token=${delegating.lastToken}`);
      // The parent reads the report as its last step's result and ends the run with it.
      const parent = ask([
        { role: 'user', content: delegating.prompt },
        { role: 'assistant', content: [call('a8', 'Agent')] },
        stepResult('a8', `${report.text}\nagentId: a1b2 (use SendMessage to continue)`),
      ]);
      expect(parent).toEqual({ text: expectedAnswer(delegating) });
    });
  });
  describe('around a compaction', () => {
    const [first, compacting, after] = createScenario('compaction').runs;
    const agentFor = (of: ScenarioRun) =>
      createScriptedAgent({ tools: AGENT_CLIS['claude-code'].tools, project: '/p', run: () => of });
    const last = first!.steps.length - 1;
    const compactionAsk = {
      role: 'user',
      content:
        'Your task is to create a detailed summary of the conversation so far. Wrap it in <summary></summary> tags.',
    };

    it('plays three runs of one conversation: the task, the compaction, a question on it', () => {
      expect(compacting).toMatchObject({ continues: true, compacts: true, marker: first!.marker });
      expect(after).toMatchObject({ continues: true, marker: first!.marker });
      expect(after!.compacts).toBeUndefined();
      expect(after!.afterCompaction).toBe(true);
      expect(expectedAnswer(compacting!)).toBe('');
      expect(expectedAnswer(after!)).toBe(expectedAnswer(first!));
    });

    it('summarizes where it is when the client asks for a compaction, in whichever run', () => {
      const messages = [
        { role: 'user', content: first!.prompt },
        {
          role: 'user',
          content: '[folded: notes/part-01.txt and 14 more, expand("conversation:user:1@30")]',
        },
        { role: 'assistant', content: [stepCall('toolu_last')] },
        stepResult('toolu_last', first!.files[pathOf(first!, last)]!),
        compactionAsk,
      ];
      for (const run of [compacting!, first!]) {
        const reply = agentFor(run)(messagesRequest(messages));
        expect(reply.toolCalls).toBeUndefined();
        expect(reply.text).toContain(
          `<summary>\nE2E-SUMMARY ${first!.marker} steps=${first!.steps.length} token=${first!.lastToken}\n</summary>`,
        );
      }
    });

    it('answers from the summary that opens the conversation after the compaction', () => {
      const summary = `This session is being continued. E2E-SUMMARY ${first!.marker} steps=${first!.steps.length} token=${first!.lastToken}`;
      const reply = agentFor(after!)(
        messagesRequest([
          { role: 'user', content: summary },
          { role: 'user', content: after!.prompt },
        ]),
      );
      expect(reply).toEqual({ text: expectedAnswer(after!) });
    });

    it('does not answer from the conversation as it was before the compaction', () => {
      const reply = agentFor(after!)(
        messagesRequest([
          { role: 'user', content: first!.prompt },
          { role: 'assistant', content: [{ type: 'text', text: expectedAnswer(first!) }] },
          { role: 'user', content: after!.prompt },
        ]),
      );
      expect(reply.text).toMatch(/^E2E-FAILED the conversation does not open with the summary/);
    });
  });

  describe('when the client compacts by itself in the middle of its task', () => {
    const [task] = createScenario('auto-compaction').runs;
    const play = createScriptedAgent({
      tools: AGENT_CLIS['claude-code'].tools,
      project: '/p',
      run: () => task!,
    });
    const checkpoint = {
      role: 'user',
      content:
        'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM.',
    };
    const summaryOf = (steps: number, token: string) => ({
      role: 'user',
      content: `Another language model started to solve this problem. E2E-SUMMARY ${task!.marker} steps=${steps} token=${token}`,
    });

    it("summarizes on Codex's checkpoint prompt, which comes without tools", () => {
      const reply = play(
        messagesRequest(
          [
            { role: 'user', content: task!.prompt },
            { role: 'assistant', content: [stepCall('toolu_7')] },
            stepResult('toolu_7', task!.files[pathOf(task!, 6)]!),
            checkpoint,
          ],
          [],
        ),
      );
      expect(reply.text).toContain(`E2E-SUMMARY ${task!.marker} steps=7 token=`);
    });

    it("summarizes opencode's conversation sent as the text of one turn, without tools", () => {
      const transcript = `Here is the conversation so far:\n\n<conversation>\n[Tool result]: ${task!.files[pathOf(task!, 4)]}\n</conversation>`;
      const reply = play(messagesRequest([{ role: 'user', content: transcript }], []));
      expect(reply.text).toContain(`E2E-SUMMARY ${task!.marker} steps=5 token=`);
    });

    it('takes the step after the one its summary names, then goes on from the results', () => {
      const compacted = [{ role: 'user', content: task!.prompt }, summaryOf(7, 'E2E-TOKEN-x')];
      expect(play(messagesRequest(compacted)).toolCalls).toEqual([
        { name: 'Bash', arguments: { command: `cat ${pathOf(task!, 7)}`, description: 'Show a note' } },
      ]);
      const stepped = [...compacted, { role: 'assistant', content: [stepCall('toolu_8')] }];
      const reply = play(
        messagesRequest([...stepped, stepResult('toolu_8', task!.files[pathOf(task!, 7)]!)]),
      );
      expect(reply.toolCalls).toEqual([{ name: 'Read', arguments: { file_path: `/p/${pathOf(task!, 8)}` } }]);
    });

    it("answers Codex's remote compaction with a compaction item, and goes on from that item", () => {
      const codex = createScriptedAgent({ tools: AGENT_CLIS.codex.tools, project: '/p', run: () => task! });
      const responses = (input: unknown[]): ScriptedRequest => ({
        index: 0,
        method: 'POST',
        path: '/v1/responses',
        headers: {},
        body: { model: 'gpt-5-codex', input, tools: [{ type: 'function', name: 'exec_command' }] },
        rawBody: '',
      });
      const userText = (value: string) => ({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: value }],
      });
      const history = [
        userText(task!.prompt),
        { type: 'function_call', call_id: 'c7', name: 'exec_command', arguments: '{"cmd":"cat x"}' },
        { type: 'function_call_output', call_id: 'c7', output: task!.files[pathOf(task!, 6)] },
      ];
      const reply = codex(responses([...history, { type: 'compaction_trigger' }]));
      expect(reply.text).toBeUndefined();
      expect(reply.compaction).toMatch(new RegExp(`^E2E-SUMMARY ${task!.marker} steps=7 token=E2E-TOKEN-`));
      const next = codex(
        responses([userText(task!.prompt), { type: 'compaction', encrypted_content: reply.compaction }]),
      );
      expect(next.toolCalls).toEqual([
        { name: 'exec_command', arguments: { cmd: `cat ${pathOf(task!, 7)}` } },
      ]);
    });

    it('answers from the summary when the compaction came after the last step', () => {
      const compacted = [
        { role: 'user', content: task!.prompt },
        summaryOf(task!.steps.length, task!.lastToken),
      ];
      expect(play(messagesRequest(compacted))).toEqual({ text: expectedAnswer(task!) });
    });
  });
});
