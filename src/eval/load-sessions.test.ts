import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BadInputError, NotFoundError } from '../core/errors.js';
import { loadSessions, parseRecordedSession, readSessionLines } from './load-sessions.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-load-sessions-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function sessionsFile(name: string, lines: string[]): string {
  const file = join(directory, name);
  writeFileSync(file, lines.join('\n'));
  return file;
}

const first = {
  id: 'fixture:one',
  meta: { system: 'mini-swe-agent' },
  messages: [
    { role: 'system', content: 'You can run bash commands.' },
    { role: 'user', content: 'Fix tests/test_util.py.' },
    {
      role: 'assistant',
      content: 'Run the tests first.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"pytest -x"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'E assert 2 == 3' },
    { role: 'assistant', content: 'Found it.' },
  ],
};
const second = {
  id: 'fixture:two',
  messages: [
    { role: 'user', content: 'Hello' },
    { role: 'assistant', content: 'Hi' },
  ],
};

describe('loadSessions', () => {
  it('reads every session of every file in order, as canonical transcripts, skipping blank lines', () => {
    const a = sessionsFile('a.jsonl', [JSON.stringify(first), '', '   ', JSON.stringify(second), '']);
    const b = sessionsFile('b.jsonl', [JSON.stringify({ ...second, id: 'fixture:three' })]);
    const sessions = loadSessions([a, b]);
    expect(sessions.map(({ id, file, line }) => ({ id, file, line }))).toEqual([
      { id: 'fixture:one', file: a, line: 1 },
      { id: 'fixture:two', file: a, line: 4 },
      { id: 'fixture:three', file: b, line: 1 },
    ]);
    const [one] = sessions;
    expect(one?.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(one?.messages[2]?.parts).toContainEqual({
      type: 'tool-call',
      id: 'call_1',
      name: 'bash',
      arguments: '{"command":"pytest -x"}',
    });
    expect(one?.messages[3]?.parts[0]).toMatchObject({
      type: 'tool-result',
      callId: 'call_1',
      name: 'bash',
      content: 'E assert 2 == 3',
    });
    expect(one?.warnings).toEqual([]);
  });

  it('gives no sessions for an empty file', () => {
    expect(loadSessions([sessionsFile('empty.jsonl', ['', ''])])).toEqual([]);
  });

  it('names every malformed line of a file at once, the first with its reason', () => {
    const file = sessionsFile('several.jsonl', [
      JSON.stringify(first),
      '{"id": "x", "messages": [',
      '[]',
      JSON.stringify({ id: 'y', messages: [{ role: 'robot', content: 'x' }] }),
    ]);
    expect(() => loadSessions([file])).toThrow(
      new RegExp(`^${file}: line 2: invalid JSON .*; and 2 more malformed lines \\(3, 4\\)$`),
    );
  });

  it('reads a file that starts with a byte order mark', () => {
    const file = sessionsFile('bom.jsonl', [`\uFEFF${JSON.stringify(first)}`]);
    expect(loadSessions([file]).map((session) => session.id)).toEqual([first.id]);
  });

  it('counts a session met again word for word once, and keeps another under a taken id apart', () => {
    const file = sessionsFile('one.jsonl', [JSON.stringify(first)]);
    const notes: string[] = [];
    expect(loadSessions([file, file], (message) => notes.push(message)).map((session) => session.id)).toEqual(
      [first.id],
    );
    expect(notes).toEqual([
      `${file}: 1 session met again word for word, first read in ${file}: counted once`,
    ]);
    const copy = sessionsFile('copy.jsonl', ['', JSON.stringify(first)]);
    expect(loadSessions([file, copy]).map((session) => session.id)).toEqual([first.id]);
    const other = {
      ...first,
      messages: [...first.messages, { role: 'user', content: 'and one more thing' }],
    };
    const clash = sessionsFile('clash.jsonl', [JSON.stringify(other)]);
    notes.length = 0;
    const read = loadSessions([file, clash], (message) => notes.push(message));
    expect(read.map((session) => session.id)).toEqual([first.id, `${first.id} (${clash} line 1)`]);
    expect(read[1]?.messages).toHaveLength(other.messages.length);
    expect(notes).toEqual([
      `session "${first.id}" in ${clash} line 1 is another than the one in ${file} line 1: read as "${first.id} (${clash} line 1)"`,
    ]);
  });

  it('refuses a missing file with a not-found error naming it', () => {
    const missing = join(directory, 'nowhere.jsonl');
    expect(() => loadSessions([missing])).toThrow(NotFoundError);
    expect(() => loadSessions([missing])).toThrow(`${missing}: no such file`);
  });

  it('refuses a directory with a bad-input error naming it', () => {
    expect(() => readSessionLines(directory)).toThrow(BadInputError);
    expect(() => readSessionLines(directory)).toThrow(`${directory}: is a directory`);
  });

  it('refuses a malformed line with a bad-input error naming the file and the line', () => {
    const file = sessionsFile('broken.jsonl', [JSON.stringify(first), '', '{"id": "x", "messages": [', '']);
    let thrown: unknown;
    try {
      loadSessions([file]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BadInputError);
    expect((thrown as Error).message).toContain(file);
    expect((thrown as Error).message).toContain('line 3');
    expect((thrown as Error).message).toContain('invalid JSON');
  });

  it('refuses a line without messages or with an invalid message, naming file, line and message', () => {
    const noMessages = sessionsFile('no-messages.jsonl', [JSON.stringify({ id: 'x' })]);
    expect(() => loadSessions([noMessages])).toThrow(BadInputError);
    expect(() => loadSessions([noMessages])).toThrow(`${noMessages}: line 1`);
    const badRole = sessionsFile('bad-role.jsonl', [
      JSON.stringify(second),
      JSON.stringify({ id: 'fixture:bad', messages: [{ role: 'robot', content: 'beep' }] }),
    ]);
    expect(() => loadSessions([badRole])).toThrow(BadInputError);
    expect(() => loadSessions([badRole])).toThrow(/line 2 \(session fixture:bad\), message 0/);
    expect(() => loadSessions([badRole])).toThrow(badRole);
  });
});

describe('parseRecordedSession', () => {
  it('keeps the file and line it was given', () => {
    const session = parseRecordedSession('virtual.jsonl', JSON.stringify(second), 7);
    expect(session).toMatchObject({ id: 'fixture:two', file: 'virtual.jsonl', line: 7 });
    expect(session.messages).toHaveLength(2);
  });
});
