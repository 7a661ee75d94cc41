import { describe, expect, it } from 'vitest';
import { createPinRule } from './governor/pins.js';
import { defaultPin, indexTranscript, type Ledger } from './ledger.js';
import { planEmbedded } from './planners/embedded-planner.js';
import { projectView } from './project-view.js';
import { latestTurnStart, rehearsePlan } from './rehearse-plan.js';
import { assistantMessage, systemMessage, toolRound, userMessage } from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';
import { type Message, messageText } from './transcript.js';

const INSTRUCTIONS = `<permissions instructions>\n${'Filesystem sandboxing: workspace-write. '.repeat(80)}`;

/** An agent that re-sends its instructions as a system message at each new request (as Codex does). */
function session() {
  return [
    systemMessage('You are a coding agent.'),
    systemMessage(INSTRUCTIONS),
    userMessage('fix the parser'),
    ...toolRound('c1', 'bash', { command: 'cat parser.py' }, 'def parse(): pass'),
    assistantMessage('Fixed parse() in parser.py.'),
    systemMessage(INSTRUCTIONS),
    userMessage('now the lexer'),
    ...toolRound('c2', 'bash', { command: 'cat lexer.py' }, 'def lex(): pass'),
    systemMessage(`${INSTRUCTIONS} Network access: enabled.`),
    userMessage('and the docs'),
  ];
}

function ledgerOf() {
  return indexTranscript(session(), { tokenCounter: approximateTokenCounter, pin: createPinRule() });
}

/** The embedded planner's plan with the view at its target (proven staleness alone), rehearsed. */
function planWithoutPressure(ledger: Ledger) {
  const protectFrom = latestTurnStart(ledger);
  const viewTokens = projectView(ledger, {}).tokens;
  const operations = planEmbedded({
    ledger,
    state: {},
    protectFrom,
    viewTokens,
    targetTokens: viewTokens,
    window: viewTokens * 2,
  });
  return {
    operations,
    rehearsal: rehearsePlan(ledger, {}, { planner: 'embedded', operations }, { protectFrom }),
  };
}

describe('system messages that restate earlier ones', () => {
  it('are marked with the first copy and not pinned; changed instructions stay pinned', () => {
    const ledger = ledgerOf();
    const systems = ledger.objects.filter((object) => object.kind === 'system');
    expect(systems.map((object) => [object.id, object.restates, object.pinned])).toEqual([
      ['system:1', undefined, true],
      ['system:2', undefined, true],
      ['system:3', 'system:2', false],
      ['system:4', undefined, true],
    ]);
  });

  it('are pruned as proven stale, to a line that names the copy still in the view', () => {
    const ledger = ledgerOf();
    const viewTokens = projectView(ledger, {}).tokens;
    const { operations, rehearsal } = planWithoutPressure(ledger);
    expect(operations).toContainEqual(expect.objectContaining({ objectId: 'system:3', operation: 'prune' }));
    const view = projectView(ledger, rehearsal.stateAfter);
    const systemTexts = view.items
      .filter((item) => item.message.role === 'system')
      .map((item) => messageText(item.message));
    expect(systemTexts).toHaveLength(4);
    expect(systemTexts[2]).toBe('[system:3: the same instructions as system:2 above, word for word]');
    expect(systemTexts.filter((text) => text === INSTRUCTIONS)).toHaveLength(1);
    expect(view.tokens).toBeLessThan(viewTokens - 500);
    // The measured tokens of the view agree with counting it again.
    const counted = projectView(ledger, rehearsal.stateAfter).items.reduce(
      (sum, item) => sum + (item.tokens ?? 0),
      0,
    );
    expect(view.tokens).toBe(counted);
  });

  it('keep what the adapter recorded of them (where they sat on the wire) when pruned', () => {
    const messages = session();
    messages[6] = { ...messages[6]!, providerData: { anthropic: { turn: 3 } } };
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    const rehearsal = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [{ objectId: 'system:3', operation: 'prune', reason: 'test' }] },
      { protectFrom: latestTurnStart(ledger) },
    );
    const item = projectView(ledger, rehearsal.stateAfter).items.find((candidate) => candidate.source === 6)!;
    expect(item.changed).toBe(true);
    expect(item.message.role).toBe('system');
    expect(item.message.providerData).toEqual({ anthropic: { turn: 3 } });
  });

  it('are the only system messages an operation may touch', () => {
    const ledger = ledgerOf();
    const protectFrom = latestTurnStart(ledger);
    const rehearsal = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: [
          { objectId: 'system:2', operation: 'prune', reason: 'test' },
          { objectId: 'system:3', operation: 'fold', reason: 'test' },
          { objectId: 'system:4', operation: 'prune', reason: 'test' },
        ],
      },
      { protectFrom },
    );
    expect(rehearsal.accepted).toEqual([]);
    expect(rehearsal.rejected.map((rejected) => [rejected.operation.objectId, rejected.reason])).toEqual([
      ['system:2', 'pinned'],
      ['system:3', 'not-applicable'],
      ['system:4', 'pinned'],
    ]);
  });
});

const AGENTS = `# AGENTS.md instructions for /work/repo\n\n<INSTRUCTIONS>\n${'Run npm test before any commit. '.repeat(60)}\n</INSTRUCTIONS>`;
const ENVIRONMENT =
  '<environment_context>\n  <cwd>/work/repo</cwd>\n  <shell>bash</shell>\n</environment_context>';

/** Codex CLI: its AGENTS.md and environment blocks come as user messages, and come again later. */
function codexSession() {
  return [
    systemMessage('You are Codex.'),
    userMessage(AGENTS),
    userMessage(ENVIRONMENT),
    userMessage('fix the parser'),
    ...toolRound('c1', 'exec_command', { cmd: 'cat parser.py' }, 'def parse(): pass'),
    assistantMessage('Fixed parse() in parser.py.'),
    userMessage(AGENTS),
    userMessage('now the lexer'),
    ...toolRound('c2', 'exec_command', { cmd: 'cat lexer.py' }, 'def lex(): pass'),
    assistantMessage('Fixed lex().'),
    userMessage('and the docs'),
  ];
}

function pinsOf(messages: ReturnType<typeof codexSession>) {
  const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
  return ledger.objects
    .filter((object) => object.kind === 'conversation')
    .map((object) => [object.id, object.pinReason, object.restates]);
}

describe('instructions a client sends as user messages', () => {
  it('are pinned as instructions, and the task goal is the first request the user wrote', () => {
    expect(pinsOf(codexSession())).toEqual([
      ['conversation:user:1', 'instructions the client sent as a user message', undefined],
      ['conversation:user:2', 'instructions the client sent as a user message', undefined],
      ['conversation:user:3', 'first user request (task goal)', undefined],
      ['conversation:user:4', undefined, 'conversation:user:1'],
      ['conversation:user:5', undefined, undefined],
      ['conversation:user:6', undefined, undefined],
    ]);
  });

  it('leave as proven stale when sent again word for word, to a line that names the first copy', () => {
    const ledger = indexTranscript(codexSession(), {
      tokenCounter: approximateTokenCounter,
      pin: createPinRule(),
    });
    const { operations, rehearsal } = planWithoutPressure(ledger);
    expect(operations).toContainEqual(
      expect.objectContaining({ objectId: 'conversation:user:4', operation: 'prune' }),
    );
    const texts = projectView(ledger, rehearsal.stateAfter).items.map((item) => messageText(item.message));
    expect(texts.filter((text) => text === AGENTS)).toHaveLength(1);
    expect(texts).toContain(
      '[conversation:user:4: the same instructions as conversation:user:1 above, word for word]',
    );
    expect(texts).toContain('now the lexer');
  });

  it('stand for the work that follows them like any request when the agent works right after them', () => {
    const messages = codexSession();
    // The copy answered directly: no request of the user's own between it and the work.
    messages.splice(8, 1);
    expect(pinsOf(messages)[3]).toEqual(['conversation:user:4', undefined, undefined]);
  });

  it("are not the task goal when they are a client's note on a local command (Claude Code)", () => {
    const caveat =
      '<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>';
    const pins = pinsOf([
      systemMessage('You are Claude Code.'),
      userMessage(caveat),
      userMessage('add a test'),
    ]);
    expect(pins).toEqual([
      ['conversation:user:1', undefined, undefined],
      ['conversation:user:2', 'first user request (task goal)', undefined],
    ]);
  });

  it('are not the task goal when they record a local command or a shell command the user ran', () => {
    // A Claude Code session begun with `/clear`, then a `!` command; a Codex one with `!ls`.
    const clear = [
      '<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>',
      '<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n            <command-args></command-args>',
      '<local-command-stdout></local-command-stdout>',
      '<bash-input>git pull</bash-input>',
      '<bash-stdout>Already up to date.</bash-stdout><bash-stderr></bash-stderr>',
      '<user_shell_command>\n<command>ls</command>\n<result>\nExit code: 0\nOutput:\nsrc\n</result>\n</user_shell_command>',
    ];
    const pins = pinsOf([
      systemMessage('You are Claude Code.'),
      ...clear.map(userMessage),
      userMessage('the logo is not rendered'),
    ]);
    expect(pins.map(([id, pin]) => pin && id)).toEqual([
      ...clear.map(() => undefined),
      'conversation:user:7',
    ]);
    // The caveat, the record and its output in one message, as a client may join them.
    const joined = pinsOf([systemMessage('You are Claude Code.'), userMessage(clear.slice(0, 3).join('\n'))]);
    expect(joined[0]?.[1]).toBeUndefined();
  });

  it('leave a local command beside a command with arguments, or beside words, the task goal', () => {
    const clear =
      '<command-name>/clear</command-name><command-message>clear</command-message><command-args></command-args>';
    const review =
      '<command-name>/review</command-name><command-message>review</command-message><command-args>158</command-args>';
    for (const request of [`${clear}\n${review}`, `${clear}\nnow fix the lexer`]) {
      expect(pinsOf([systemMessage('You are Claude Code.'), userMessage(request)])[0]?.[1]).toBe(
        'first user request (task goal)',
      );
    }
  });

  it('leave a slash command that prompts the model the task goal', () => {
    const commands = [
      '<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>158</command-args>',
      '<command-message>github-pr-review</command-message>\n<command-name>/github-pr-review</command-name>',
    ];
    for (const command of commands) {
      expect(pinsOf([systemMessage('You are Claude Code.'), userMessage(command)])).toEqual([
        ['conversation:user:1', 'first user request (task goal)', undefined],
      ]);
    }
  });

  it('leave a request the user wrote beside them, or beside reminders, the task goal', () => {
    const reminded =
      '<system-reminder>CLAUDE.md: use pnpm</system-reminder>\nadd a test\n<system-reminder>todo list empty</system-reminder>';
    const caveated =
      '<local-command-caveat>Caveat: local commands below.</local-command-caveat>\nnow add a test';
    for (const request of [reminded, caveated, `${ENVIRONMENT}\nand fix the lexer`]) {
      expect(pinsOf([systemMessage('You are an agent.'), userMessage(request)])).toEqual([
        ['conversation:user:1', 'first user request (task goal)', undefined],
      ]);
    }
  });

  it('leave a pin rule of its own, called without the context, the first user message as the goal', () => {
    const ledger = indexTranscript(codexSession(), { tokenCounter: approximateTokenCounter });
    expect(ledger.objects.filter((object) => object.pinned).map((object) => object.id)).toEqual([
      'system:1',
      'conversation:user:1',
      'conversation:user:2',
      'conversation:user:3',
    ]);
    expect(defaultPin(ledger.objects[1]!)).toBe('first user request (task goal)');
  });
});

describe('instructions that act where they stand', () => {
  /** Claude Code's effort directive: a system message of no text, its effort beside it. */
  const directive = (effort: string, turn: number): Message => ({
    role: 'system',
    parts: [],
    providerData: { anthropic: { turn, extra: { output_config: { effort } } } },
  });
  /** An item kept whole, as the Responses adapter reads Codex's compacted history. */
  const kept = (kind: string, data: Record<string, unknown>): Message => ({
    role: 'system',
    parts: [{ type: 'opaque', provider: 'openaiResponses', kind, text: '', data: { type: kind, ...data } }],
  });

  it('never restate one another: not an effort directive, not a block kept whole, not empty text', () => {
    const transcript = [
      systemMessage(INSTRUCTIONS),
      userMessage('fix the parser'),
      directive('low', 2),
      ...toolRound('c1', 'bash', { command: 'cat parser.py' }, 'def parse(): pass'),
      directive('high', 5),
      kept('compaction', { encrypted_content: 'gAAAAB-first' }),
      kept('configuration_update', { reasoning: { effort: 'low' } }),
      directive('low', 8),
      kept('compaction', { encrypted_content: 'gAAAAB-second' }),
      systemMessage(''),
      systemMessage(''),
      userMessage('and the lexer'),
      // A breakpoint beside the text (opencode marks its system message) changes nothing.
      {
        ...systemMessage(INSTRUCTIONS),
        providerData: { openaiChat: { extra: { cache_control: { type: 'ephemeral' } } } },
      },
    ];
    const ledger = indexTranscript(transcript, {
      tokenCounter: approximateTokenCounter,
      pin: createPinRule(),
    });
    const systems = ledger.objects.filter((object) => object.kind === 'system');
    expect(systems.map((object) => [object.id, object.restates ?? null, object.pinned])).toEqual([
      ['system:1', null, true],
      ...[2, 3, 4, 5, 6, 7, 8, 9].map((k) => [`system:${k}`, null, true]),
      // Text alone, said again word for word, still goes.
      ['system:10', 'system:1', false],
    ]);
  });
});
