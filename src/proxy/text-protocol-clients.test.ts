/**
 * Clients with a text protocol (mini-swe-agent, Cline, Roo Code) send each command's output as a
 * user message. Behind the proxy those outputs fold in place, as tool results: the message stays
 * a user message where it was, turns still alternate, and the fold points to a recoverable id.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isToolOutput } from '../core/ledger.js';
import type { Planner } from '../core/planners/planner.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { createGovernorPool } from './governor-pool.js';
import { fileContent } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, pointerKeys, storeSessionOf } from './testing/recovery-pointers.js';
import { EXPAND_TOOL } from './transparent-recovery.js';

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const TASK = 'Find why computeValue returns NaN for module 3 and fix it.';

/** mini-swe-agent's shape on Chat Completions: a bash block per step, outputs as user messages. */
function miniSweMessages(turns: number): Array<Record<string, unknown>> {
  const messages: Array<Record<string, unknown>> = [
    { role: 'system', content: 'You run one bash command per reply, in a ```bash block.' },
    { role: 'user', content: TASK },
  ];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push({
      role: 'assistant',
      content: `THOUGHT: read module ${turn}.\n\n\`\`\`bash\ncat src/module${turn}.ts\n\`\`\``,
    });
    messages.push({
      role: 'user',
      content: `<returncode>0</returncode>\n<output>\n${fileContent(turn)}\n</output>`,
    });
  }
  return messages;
}

/** Cline's shape on Anthropic Messages: a result header, the output, the environment details. */
function clineMessages(turns: number): Array<Record<string, unknown>> {
  const messages: Array<Record<string, unknown>> = [
    { role: 'user', content: [{ type: 'text', text: `<task>\n${TASK}\n</task>` }] },
  ];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'text', text: `<read_file>\n<path>src/module${turn}.ts</path>\n</read_file>` }],
    });
    messages.push({
      role: 'user',
      content: [
        { type: 'text', text: `[read_file for 'src/module${turn}.ts'] Result:` },
        { type: 'text', text: fileContent(turn) },
        { type: 'text', text: '<environment_details>\n# VSCode Open Tabs\n</environment_details>' },
      ],
    });
  }
  return messages;
}

const roles = (messages: Array<{ role: string }>) => messages.map((message) => message.role);

/** A planner that folds every tool output before the latest turn, to see folds on the wire. */
const foldOutputs: Planner = {
  name: 'fold-outputs',
  plan: async ({ ledger, protectFrom }) => ({
    plan: {
      planner: 'fold-outputs',
      operations: ledger.objects
        .filter((object) => isToolOutput(object) && object.messageIndex < protectFrom)
        .map((object) => ({ objectId: object.id, operation: 'fold' as const, reason: 'test' })),
    },
  }),
};

async function foldingFixture(text: string): Promise<ProxyFixture> {
  const store = createMemoryStore();
  return startProxyFixture({
    script: () => ({ text }),
    store,
    window: 6000,
    proxy: {
      governor: createGovernorPool({
        store,
        cache: 'blind',
        planner: foldOutputs,
        triggers: { deep: false },
      }),
    },
  });
}

type SentMessage = { role: string; content: unknown };
const sentMessages = (current: ProxyFixture) =>
  (current.upstream.requests[0]!.body as { messages: SentMessage[] }).messages;

describe('text-protocol clients behind the proxy', () => {
  it("chat: mini-swe-agent's outputs fold in place, as user messages that name a recoverable output", async () => {
    fixture = await foldingFixture('THOUGHT: next.');
    const messages = miniSweMessages(8);
    const response = await fixture.post('chat', { model: 'gpt-4o', messages });
    expect(response.status).toBe(200);
    const sent = sentMessages(fixture);
    // The same turns in the same order: an output never leaves its step, nor becomes a request.
    expect(roles(sent)).toEqual(roles(messages as SentMessage[]));
    for (let turn = 0; turn < 7; turn += 1) {
      const folded = sent[3 + 2 * turn]!;
      expect(folded.role).toBe('user');
      expect(folded.content).toMatch(
        new RegExp(`^\\[folded function:bash:${turn + 1}: bash command=cat src/module${turn}\\.ts → ok`),
      );
      expect(folded.content).toContain(`expand("function:bash:${turn + 1}")`);
      expect(sent[2 + 2 * turn]).toEqual(messages[2 + 2 * turn]);
    }
    expect(sent.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect(sent.at(-1)).toEqual(messages.at(-1));
    // Each output is one `expand` away, exactly as the client sent it.
    const keys = pointerKeys(JSON.stringify(sent));
    expect(keys).toEqual(Array.from({ length: 7 }, (_, turn) => `function:bash:${turn + 1}`));
    const expanded = await expandKeys(fixture.store, storeSessionOf(response), keys);
    expect(keys.map((key) => expanded.get(key))).toEqual(
      keys.map((_, turn) => messages[3 + 2 * turn]!.content),
    );
  });

  it("messages: Cline's results fold in place, turns still alternate, its cache breakpoints stay", async () => {
    fixture = await foldingFixture('<read_file><path>x</path></read_file>');
    const messages = clineMessages(8);
    // Cline marks the last block of its last two user messages as cache breakpoints.
    const breakpoint = { type: 'ephemeral' };
    for (const index of [messages.length - 3, messages.length - 1]) {
      const blocks = messages[index]!.content as Array<Record<string, unknown>>;
      blocks[blocks.length - 1] = { ...blocks.at(-1), cache_control: breakpoint };
    }
    const response = await fixture.post('messages', {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages,
    });
    expect(response.status).toBe(200);
    const sent = sentMessages(fixture);
    expect(roles(sent)).toEqual(roles(messages as SentMessage[]));
    const text = JSON.stringify(sent[2]);
    expect(text).toMatch(/\[folded function:read_file:1: read_file path=src\/module0\.ts → ok/);
    expect(text).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
    expect(JSON.stringify(sent.at(-1))).toContain(JSON.stringify(fileContent(7)).slice(1, -1));
    // The task is a request, not an output: it stays as sent.
    expect(sent[0]).toEqual(messages[0]);
    // The folded result's breakpoint moves to the fold that took its place; the latest stays.
    expect(JSON.stringify(sent).split('"cache_control"')).toHaveLength(3);
    expect(sent.at(-3)?.content).toEqual([
      {
        type: 'text',
        text: expect.stringMatching(/^\[folded function:read_file:7: /) as unknown as string,
        cache_control: breakpoint,
      },
    ]);
    expect(sent.at(-1)).toEqual(messages.at(-1));
  });

  it('with the shipped planner, no observation is ever parted from the step that ran its command', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'THOUGHT: next.' }) });
    const messages = miniSweMessages(8);
    expect((await fixture.post('chat', { model: 'gpt-4o', messages })).status).toBe(200);
    const sent = sentMessages(fixture);
    expect(JSON.stringify(sent)).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
    sent.forEach((message, index) => {
      const output = String(message.content).match(
        /^<returncode>0<\/returncode>\n<output>\n\/\/ src\/module(\d)/,
      );
      if (output) expect(sent[index - 1]?.content).toContain(`cat src/module${output[1]}.ts`);
    });
    expect(sent.slice(-2)).toEqual(messages.slice(-2));
  });
});

describe('Cline with files its task mentions, behind the proxy', () => {
  const fileBlock = (turn: number) =>
    `<file_content path="src/module${turn}.ts">\n${fileContent(turn, 160)}\n</file_content>`;
  const words = `<task>\nWhy is value2_90 NaN? See 'src/lib/' (see below for folder content)\n</task>`;
  const folder = `<folder_content path="src/lib/">\n├── module1.ts\n└── module2.ts\n\n${fileBlock(1)}\n\n${fileBlock(2)}\n</folder_content>`;

  it('folds them in place to fit, the task in its own words, and the model can expand them', async () => {
    let expanded = false;
    fixture = await startProxyFixture({
      window: 6_000,
      script: (request) => {
        const key = pointerKeys(request.rawBody).find((pointer) =>
          pointer.startsWith('function:folder_content:'),
        );
        if (expanded || key === undefined)
          return { text: '<attempt_completion>value2_90</attempt_completion>' };
        expanded = true;
        return { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: key } }] };
      },
    });
    const messages = clineMessages(4);
    messages[0] = {
      role: 'user',
      content: [
        { type: 'text', text: `${words}\n\n${folder}` },
        { type: 'text', text: '<environment_details>\n# Current Mode\nACT MODE\n</environment_details>' },
      ],
    };
    const response = await fixture.post('messages', {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages,
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('value2_90');
    expect(fixture.logs[0]).toBeDefined();
    expect(fixture.logs[0]!.warnings ?? []).not.toContain('over-window');
    const [first, second] = fixture.upstream.requests;
    const sent = (first!.body as { messages: SentMessage[] }).messages;
    // The task goes up in the user's words; its folder reduced where it stood, one expand away.
    const task = (sent[0]!.content as Array<{ text: string }>)[0]!.text;
    expect(task.startsWith(`${words}\n\n`)).toBe(true);
    expect(task).toContain('expand("function:folder_content:1")');
    expect(task).not.toContain('value2_90 = computeValue');
    // Environment details of a line are not worth a fold, which would be bigger.
    expect((sent[0]!.content as unknown[])[1]).toEqual((messages[0]!.content as unknown[])[1]);
    expect(sent.at(-1)).toEqual(messages.at(-1));
    // Asked for, it comes back byte for byte (its first page: recovery pages what does not fit).
    expect(second!.rawBody).toContain(JSON.stringify(folder.slice(0, 2_000)).slice(1, -1));
  });
});
