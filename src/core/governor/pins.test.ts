import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../ledger.js';
import { toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import type { PinOptions } from './governor-types.js';
import { createPinRule, globToRegExp } from './pins.js';

function pinsOf(messages: Message[], options?: PinOptions): Array<[string, string | undefined]> {
  const ledger: Ledger = indexTranscript(messages, {
    tokenCounter: approximateTokenCounter,
    pin: createPinRule(options),
  });
  return ledger.objects.filter((object) => object.pinned).map((object) => [object.id, object.pinReason]);
}

describe('globToRegExp', () => {
  it('matches * within a segment, ** across segments and ? as one character', () => {
    expect(globToRegExp('src/*.ts').test('src/app.ts')).toBe(true);
    expect(globToRegExp('src/*.ts').test('src/deep/app.ts')).toBe(false);
    expect(globToRegExp('src/**/*.ts').test('src/deep/er/app.ts')).toBe(true);
    expect(globToRegExp('file?.md').test('file1.md')).toBe(true);
    expect(globToRegExp('file?.md').test('file12.md')).toBe(false);
  });

  it('escapes regular expression characters', () => {
    expect(globToRegExp('a+b(1).txt').test('a+b(1).txt')).toBe(true);
    expect(globToRegExp('a.txt').test('abtxt')).toBe(false);
  });

  it('matches anywhere in a string (arguments are JSON text)', () => {
    expect(globToRegExp('docs/*.md').test('{"path":"/repo/docs/spec.md"}')).toBe(true);
  });
});

describe('createPinRule', () => {
  const goal = userMessage('Implement the exporter.');

  it('keeps the default pins: system prompt and the first user request', () => {
    const messages: Message[] = [{ role: 'system', parts: [{ type: 'text', text: 'be useful' }] }, goal];
    expect(pinsOf(messages)).toEqual([
      ['system:1', 'system prompt'],
      ['conversation:user:1', 'first user request (task goal)'],
    ]);
  });

  it('pins the results of protected tools', () => {
    const messages = [
      goal,
      ...toolRound('c1', 'todo_write', { items: ['a'] }, 'saved 1 todo'),
      ...toolRound('c2', 'bash', { command: 'ls' }, 'a b c'),
    ];
    expect(pinsOf(messages, { tools: ['todo_write'] })).toContainEqual([
      'function:todo_write:1',
      'protected tool todo_write',
    ]);
    expect(pinsOf(messages, { tools: ['todo_write'] }).map(([id]) => id)).not.toContain('function:bash:2');
  });

  it('pins results whose call names a path matching a glob', () => {
    const messages = [
      goal,
      ...toolRound('c1', 'read_file', { path: 'docs/design/api.md' }, '# API'),
      ...toolRound('c2', 'read_file', { path: 'src/api.ts' }, 'export {}'),
    ];
    const pins = pinsOf(messages, { paths: ['docs/**/*.md'] });
    expect(pins).toContainEqual(['function:read_file:1', 'pinned path']);
    expect(pins.map(([id]) => id)).not.toContain('function:read_file:2');
  });

  it('pins rules files when they are read, unless turned off', () => {
    const messages = [
      goal,
      ...toolRound('c1', 'read_file', { path: 'AGENTS.md' }, 'Always run npm test.'),
      ...toolRound('c2', 'read_file', { path: '/repo/CLAUDE.md' }, 'Use tabs.'),
      ...toolRound('c3', 'bash', { command: 'cat .cursorrules' }, 'No any.'),
      ...toolRound('c4', 'read_file', { path: 'MYAGENTS.md.bak' }, 'old'),
    ];
    const pins = pinsOf(messages);
    expect(pins).toContainEqual(['skill:read_file:1', 'rules file']);
    expect(pins).toContainEqual(['skill:read_file:2', 'rules file']);
    expect(pins).toContainEqual(['skill:bash:3', 'rules file']);
    expect(pins.map(([id]) => id)).not.toContain('function:read_file:4');
    expect(pinsOf(messages, { rulesFiles: false }).filter(([, reason]) => reason === 'rules file')).toEqual(
      [],
    );
  });

  it('pins a read of a rules file, not a call that merely mentions one (text it writes, a search, a diff)', () => {
    const longScript = `echo start; ${'x'.repeat(600)}; cat AGENTS.md`;
    const messages = [
      goal,
      ...toolRound(
        'c1',
        'Write',
        {
          file_path: '/repo/src/report.tsx',
          content: 'export const title = "Checks AGENTS.md";\nexport {};',
        },
        'The file /repo/src/report.tsx has been updated.',
      ),
      ...toolRound(
        'c2',
        'Edit',
        { file_path: 'src/a.ts', old_string: 'a', new_string: 'see\nCLAUDE.md' },
        'ok',
      ),
      ...toolRound('c3', 'bash', { command: longScript }, 'done'),
      ...toolRound('c4', 'bash', { command: 'sed -n 1,80p docs/CLAUDE.md' }, 'Use tabs.'),
      ...toolRound('c5', 'Write', { file_path: '/repo/AGENTS.md', content: 'Run the tests.\nAlways.' }, 'ok'),
      ...toolRound('c6', 'bash', { command: 'rg -n "flaky" AGENTS.md docs README.md' }, 'AGENTS.md:3: flaky'),
      ...toolRound('c7', 'bash', { command: 'git diff -- AGENTS.md' }, '+Run the tests.'),
      ...toolRound('c8', 'TaskCreate', { subject: 'Update CLAUDE.md docs' }, 'Task 1 created'),
      ...toolRound('c9', 'bash', { command: 'test -f CLAUDE.md && cat CLAUDE.md || true' }, 'Use tabs.'),
    ];
    const pins = pinsOf(messages);
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    const read = ['skill:bash:4', 'skill:Write:5', 'skill:bash:9'];
    expect(ledger.objects.filter((object) => object.kind === 'skill').map((object) => object.id)).toEqual(
      read,
    );
    expect(pins.filter(([, reason]) => reason === 'rules file').map(([id]) => id)).toEqual(read);
  });

  it('keeps the pin on the latest read of a rules file only: an earlier read of it is superseded', () => {
    const messages = [
      goal,
      ...toolRound('c1', 'read_file', { path: 'AGENTS.md' }, 'Always run npm test.'),
      ...toolRound('c2', 'read_file', { path: 'src/app.ts' }, 'export {};'),
      ...toolRound('c3', 'read_file', { path: 'AGENTS.md' }, 'Always run npm test and lint.'),
      ...toolRound('c4', 'read_file', { path: 'CLAUDE.md' }, 'Use tabs.'),
    ];
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    expect(ledger.get('skill:read_file:1')).toMatchObject({ kind: 'skill', pinned: false });
    expect(ledger.get('skill:read_file:1')?.pinReason).toBeUndefined();
    expect(ledger.get('function:read_file:2')).toMatchObject({ kind: 'function', pinned: false });
    expect(ledger.get('skill:read_file:3')).toMatchObject({ pinned: true, pinReason: 'rules file' });
    expect(ledger.get('skill:read_file:4')).toMatchObject({ pinned: true, pinReason: 'rules file' });
    // Indexed call by call, the ledger comes to the same pins.
    const stepwise = indexTranscript(messages.slice(0, 3), {
      tokenCounter: approximateTokenCounter,
      pin: createPinRule(),
    });
    expect(stepwise.get('skill:read_file:1')?.pinned).toBe(true);
    stepwise.append(messages.slice(3));
    expect(stepwise.objects.map((object) => [object.id, object.pinned])).toEqual(
      ledger.objects.map((object) => [object.id, object.pinned]),
    );
  });

  it('makes skills the agent loads their own kind, numbered with the other tool outputs', () => {
    const messages = [
      goal,
      ...toolRound('c1', 'Skill', { skill: 'pdf' }, 'Use pdftotext for text extraction.'),
      ...toolRound('c2', 'Read', { file_path: '/repo/.claude/skills/test/SKILL.md' }, '# Testing skill'),
      ...toolRound('c3', 'Read', { file_path: '/repo/src/skill.ts' }, 'export {};'),
    ];
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
    expect(
      ledger.objects.filter((object) => object.kind !== 'conversation').map((object) => object.id),
    ).toEqual(['skill:Skill:1', 'skill:Read:2', 'function:Read:3']);
    // Skills are not pinned: many are loaded and some are done with; a fold keeps their name.
    expect(ledger.objects.some((object) => object.pinned && object.kind === 'skill')).toBe(false);
  });

  it('pins short user turns that state a constraint, unless turned off', () => {
    const messages = [
      goal,
      userMessage('You must not touch the migrations folder.'),
      userMessage('Never push to main.'),
      userMessage("Don't use lodash."),
      userMessage('Now add a test for the exporter.'),
      userMessage(`Here is the log:\n${'the build must be green '.repeat(100)}`),
    ];
    const pins = pinsOf(messages);
    expect(pins.filter(([, reason]) => reason === 'user constraint').map(([id]) => id)).toEqual([
      'conversation:user:2',
      'conversation:user:3',
      'conversation:user:4',
    ]);
    expect(pinsOf(messages, { userConstraints: false }).map(([id]) => id)).toEqual(['conversation:user:1']);
  });

  it('does not pin tool outputs that merely contain constraint words', () => {
    const messages = [
      goal,
      ...toolRound('c1', 'bash', { command: 'cat notes.txt' }, 'you must never do this'),
    ];
    expect(pinsOf(messages).map(([id]) => id)).toEqual(['conversation:user:1']);
  });
});
