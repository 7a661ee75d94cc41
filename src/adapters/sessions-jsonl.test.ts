import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { fromOpenAIChat } from './openai-chat/convert-from-openai-chat.js';
import { toOpenAIChat } from './openai-chat/convert-to-openai-chat.js';
import { parseSessionLine, parseSessionsJsonl } from './sessions-jsonl.js';

const session = {
  id: 'example/agent-runs:task-42',
  source: 'example/agent-runs@0123456789abcdef0123456789abcdef01234567:runs/task-42.traj.json',
  license: 'MIT',
  meta: {
    system: 'mini-swe-agent 1.15.0',
    model: 'example-model',
    task: 'task-42',
    exit_status: 'Submitted',
  },
  messages: [
    { role: 'system', content: 'You can run bash commands.' },
    { role: 'user', content: 'Fix the failing test in tests/test_util.py.' },
    {
      role: 'assistant',
      content: 'THOUGHT: run the test first.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command": "pytest -x"}' } },
      ],
      reasoning_content: 'Start by reproducing.',
    },
    { role: 'tool', content: '<returncode>1</returncode>\nE assert 2 == 3', tool_call_id: 'call_1' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'submit', arguments: '{}' } }],
    },
  ],
};
const line = JSON.stringify(session);

describe('parseSessionLine', () => {
  it('reads a recorded session line', () => {
    const parsed = parseSessionLine(line, 1);
    expect(parsed).toEqual(session);
    const canonical = fromOpenAIChat(parsed.messages).messages;
    expect(JSON.stringify(toOpenAIChat(canonical).messages)).toBe(JSON.stringify(session.messages));
  });

  it('keeps only what is there: source and meta are optional', () => {
    expect(parseSessionLine(JSON.stringify({ id: 'x', messages: [] }), 3)).toEqual({ id: 'x', messages: [] });
  });

  it('names the line of malformed JSON', () => {
    expect(() => parseSessionLine('{"id": "x", "messages": [', 7)).toThrow(BadInputError);
    expect(() => parseSessionLine('{"id": "x", "messages": [', 7)).toThrow(/^line 7: invalid JSON/);
  });

  it('names the line of a missing id or messages', () => {
    expect(() => parseSessionLine(JSON.stringify({ messages: [] }), 2)).toThrow(/^line 2: id: /);
    expect(() => parseSessionLine(JSON.stringify({ id: 'x' }), 5)).toThrow(/^line 5: messages: /);
    expect(() => parseSessionLine('"x"', 6)).toThrow(/^line 6: .*expected object/);
    expect(() => parseSessionLine('   ', 9)).toThrow(/^line 9: empty line/);
  });

  it('says what the usual wrong files are: a JSON array, pretty-printed JSON, a file of messages', () => {
    const jsonLines = 'a sessions file holds one {"id", "messages": [...]} object per line (JSON lines)';
    expect(() => parseSessionLine(JSON.stringify([session]), 1)).toThrow(
      `line 1: a JSON array: ${jsonLines}`,
    );
    expect(() => parseSessionLine('{', 1)).toThrow(
      `line 1: "{" alone: ${jsonLines} (is it pretty-printed JSON?)`,
    );
    expect(() => parseSessionLine(JSON.stringify({ role: 'user', content: 'hi' }), 2)).toThrow(
      `line 2: a message, not a session: ${jsonLines}`,
    );
  });

  it('names the line, session and message index of a malformed message', () => {
    const bad = {
      id: 'x',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'tool', content: 'orphan' },
      ],
    };
    try {
      parseSessionLine(JSON.stringify(bad), 4);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(BadInputError);
      expect((error as BadInputError).message).toMatch(/^line 4 \(session x\), message 1: tool_call_id/);
      expect((error as BadInputError).messageIndex).toBe(1);
    }
  });
});

describe('parseSessionsJsonl', () => {
  it('skips blank lines and numbers lines from 1', () => {
    const text = `${line}\n\n${JSON.stringify({ id: 'second', messages: [] })}\n`;
    expect(parseSessionsJsonl(text).map((entry) => entry.id)).toEqual([session.id, 'second']);
    expect(() => parseSessionsJsonl(`${line}\n\n{oops`)).toThrow(/^line 3: invalid JSON/);
  });
});
