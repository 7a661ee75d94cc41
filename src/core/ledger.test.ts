import { describe, expect, it } from 'vitest';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import {
  argumentValuesText,
  countMessageTokens,
  createLedger,
  defaultPin,
  indexTranscript,
  type Ledger,
  type LedgerObject,
  type LedgerOptions,
  messageReferenceText,
  rankAnchors,
  toolIdName,
} from './ledger.js';
import { PARSER_SOURCE, sampleSession } from './testing/sample-session.js';
import {
  assistantCalls,
  assistantMessage,
  systemMessage,
  toolCall,
  toolMessage,
  toolResult,
  toolRound,
  userMessage,
} from './testing/transcript-builders.js';
import { approximateTokenCounter, MESSAGE_OVERHEAD_TOKENS } from './tokens.js';
import type { Message } from './transcript.js';

const options: LedgerOptions = { tokenCounter: approximateTokenCounter };

function ids(ledger: Ledger): string[] {
  return ledger.objects.map((object) => object.id);
}

function object(ledger: Ledger, id: string): LedgerObject {
  const found = ledger.get(id);
  if (!found) throw new Error(`no ${id} in ${ids(ledger).join(', ')}`);
  return found;
}

describe('indexTranscript: ids', () => {
  it('names the system prompt, user requests and tool results with per-kind counters', () => {
    const ledger = indexTranscript(sampleSession(), options);
    expect(ids(ledger)).toEqual([
      'system:1',
      'conversation:user:1',
      'function:read_file:1',
      'function:bash:2',
      'function:edit_file:3',
      'function:bash:4',
      'conversation:user:2',
      'function:read_file:5',
    ]);
  });

  it('counts tool results across tools (the N of function:<tool>:N is global)', () => {
    const ledger = indexTranscript(sampleSession(), options);
    const functions = ledger.objects.filter((entry) => entry.kind === 'function');
    expect(functions.map((entry) => Number(entry.id.split(':').at(-1)))).toEqual([1, 2, 3, 4, 5]);
  });

  it('gives every tool result of a parallel call its own id, in part order', () => {
    const ledger = indexTranscript(
      [
        userMessage('look at both files'),
        assistantCalls([
          toolCall('a', 'read_file', { path: 'a.py' }),
          toolCall('b', 'read_file', { path: 'b.py' }),
        ]),
        toolMessage(toolResult('a', 'read_file', 'print(1)'), toolResult('b', 'read_file', 'print(2)')),
      ],
      options,
    );
    const first = object(ledger, 'function:read_file:1');
    const second = object(ledger, 'function:read_file:2');
    expect([first.partIndex, first.callId, second.partIndex, second.callId]).toEqual([0, 'a', 1, 'b']);
    expect(ledger.objectsByMessage.get(2)?.map((entry) => entry.id)).toEqual([first.id, second.id]);
  });

  it('sanitises tool names for ids', () => {
    expect(toolIdName('mcp__github:create issue')).toBe('mcp__github_create_issue');
    expect(toolIdName('str_replace_based_edit_tool')).toBe('str_replace_based_edit_tool');
    expect(toolIdName('fs.read-file')).toBe('fs.read-file');
    expect(toolIdName('::')).toBe('_');
    expect(toolIdName('')).toBe('tool');
    const ledger = indexTranscript(
      [userMessage('go'), ...toolRound('c1', 'mcp__github:create issue', { title: 'x' }, 'created #12')],
      options,
    );
    const created = ledger.objects.find((entry) => entry.kind === 'function');
    expect(created?.id).toBe('function:mcp__github_create_issue:1');
    expect(created?.toolName).toBe('mcp__github:create issue');
  });

  it('names a second system message system:2', () => {
    const ledger = indexTranscript([systemMessage('a'), systemMessage('b'), userMessage('hi')], options);
    expect(ids(ledger)).toEqual(['system:1', 'system:2', 'conversation:user:1']);
  });

  it('does not make objects of assistant messages', () => {
    const ledger = indexTranscript(sampleSession(), options);
    for (const [index, message] of sampleSession().entries()) {
      if (message.role === 'assistant') expect(ledger.objectsByMessage.get(index)).toBeUndefined();
    }
  });
});

describe('indexTranscript: stability', () => {
  function snapshot(ledger: Ledger) {
    return {
      objects: JSON.parse(JSON.stringify(ledger.objects)) as unknown,
      messageTokens: [...ledger.messageTokens],
      totalTokens: ledger.totalTokens,
    };
  }

  it('gives the same ledger when the same transcript is indexed again', () => {
    expect(snapshot(indexTranscript(sampleSession(), options))).toEqual(
      snapshot(indexTranscript(sampleSession(), options)),
    );
  });

  it('gives the same ids to a prefix as to the whole transcript', () => {
    const messages = sampleSession();
    const whole = indexTranscript(messages, options);
    for (let cut = 0; cut <= messages.length; cut += 1) {
      const prefix = indexTranscript(messages.slice(0, cut), options);
      expect(ids(prefix)).toEqual(ids(whole).filter((id) => object(whole, id).messageIndex < cut));
    }
  });

  it('gives identical objects, tokens, anchors and references when messages are appended one by one', () => {
    const messages = sampleSession();
    const atOnce = indexTranscript(messages, options);
    const oneByOne = createLedger(options);
    for (const message of messages) oneByOne.append([message]);
    expect(snapshot(oneByOne)).toEqual(snapshot(atOnce));
  });

  it('gives identical ledgers for any split into two appends', () => {
    const messages = sampleSession();
    const atOnce = snapshot(indexTranscript(messages, options));
    for (let cut = 0; cut <= messages.length; cut += 1) {
      const ledger = createLedger(options);
      ledger.append(messages.slice(0, cut));
      ledger.append(messages.slice(cut));
      expect(snapshot(ledger)).toEqual(atOnce);
    }
  });

  it('indexes anchors and references the same whenever they are first read', () => {
    const messages = sampleSession();
    const readAtEnd = indexTranscript(messages, options);
    const readAsTheyCome = createLedger(options);
    for (const message of messages) {
      readAsTheyCome.append([message]);
      for (const each of readAsTheyCome.objects) expect(each.references).toBeDefined();
      expect(readAsTheyCome.spokenAnchors).toBeDefined();
    }
    expect(snapshot(readAsTheyCome)).toEqual(snapshot(readAtEnd));
    expect([...readAsTheyCome.spokenAnchors]).toEqual([...readAtEnd.spokenAnchors]);
    expect(readAtEnd.objects.some((each) => each.references.length > 0)).toBe(true);
    expect(readAtEnd.objects.every((each) => each.kind === 'system' || each.anchors.length > 0)).toBe(true);
  });

  it('lets a pin rule read the anchors of the object it judges', () => {
    const seen: number[] = [];
    const ledger = createLedger({
      ...options,
      pin: (each) => {
        seen.push(each.anchors.length);
        return undefined;
      },
    });
    ledger.append(sampleSession());
    expect(seen.some((count) => count > 0)).toBe(true);
    expect(seen).toEqual(ledger.objects.map((each) => each.anchors.length));
  });

  it('takes bounds for messages appended with bounds, never below the counts, and counts them when settled', () => {
    const counted: string[] = [];
    const counter = {
      name: 'chars/4, bound by chars',
      count: (text: string) => {
        counted.push(text);
        return approximateTokenCounter.count(text);
      },
      bound: (text: string) => text.length,
    };
    const messages = sampleSession();
    const exact = snapshot(indexTranscript(messages, options));
    const ledger = createLedger({ tokenCounter: counter });
    ledger.append(messages.slice(0, 10));
    const countedBefore = counted.length;
    ledger.append(messages.slice(10), undefined, { bounded: true });
    expect(counted).toHaveLength(countedBefore);
    expect(ledger.boundedMessages).toBe(messages.length - 10);
    const bounded = snapshot(ledger);
    expect(bounded.totalTokens).toBeGreaterThan(exact.totalTokens);
    bounded.messageTokens.forEach((tokens, index) => {
      expect(tokens).toBeGreaterThanOrEqual(exact.messageTokens[index]!);
    });
    for (const each of ledger.objects)
      expect(each.tokens).toBeGreaterThanOrEqual(object(indexTranscript(messages, options), each.id).tokens);
    ledger.settle();
    expect(ledger.boundedMessages).toBe(0);
    expect(snapshot(ledger)).toEqual(exact);
    ledger.settle();
    expect(snapshot(ledger)).toEqual(exact);
    // A counter without a bound counts at once.
    const plain = createLedger(options);
    plain.append(messages, undefined, { bounded: true });
    expect(plain.boundedMessages).toBe(0);
    expect(snapshot(plain)).toEqual(exact);
  });

  it('keeps existing objects as they were when later messages arrive, except spans and references', () => {
    const messages = sampleSession();
    const ledger = indexTranscript(messages.slice(0, 10), options);
    const before = JSON.parse(JSON.stringify(object(ledger, 'function:bash:2'))) as LedgerObject;
    ledger.append(messages.slice(10));
    const after = object(ledger, 'function:bash:2');
    expect({ ...after, references: [] }).toEqual({ ...before, references: [] });
    expect(after.references.slice(0, before.references.length)).toEqual(before.references);
  });
});

describe('indexTranscript: objects', () => {
  it('records where a function object, its call and its arguments are', () => {
    const ledger = indexTranscript(sampleSession(), options);
    const read = object(ledger, 'function:read_file:1');
    expect(read).toMatchObject({
      kind: 'function',
      messageIndex: 3,
      partIndex: 0,
      span: { start: 3, end: 4 },
      toolName: 'read_file',
      callId: 'call_1',
      callMessageIndex: 2,
      callArguments: '{"path":"src/parser.py"}',
      isError: false,
      pinned: false,
    });
  });

  it('takes anchors from the output and the argument values, not the argument keys', () => {
    const ledger = indexTranscript(sampleSession(), options);
    const values = object(ledger, 'function:read_file:1').anchors.map((anchor) => anchor.value);
    expect(values[0]).toBe('src/parser.py');
    expect(values).toEqual(
      expect.arrayContaining(['parse_line', 'TOKEN_PATTERN', 'parse_file', 'ValueError']),
    );
    const edit = ledger.objects.find((entry) => entry.toolName === 'edit_file');
    expect(edit?.anchors.map((anchor) => anchor.value)).not.toContain('path');
  });

  it('takes the tool name from the result when the call is missing', () => {
    const ledger = indexTranscript(
      [userMessage('go'), toolMessage(toolResult('lost', 'grep', 'src/a.py:1: hit'))],
      options,
    );
    const orphan = object(ledger, 'function:grep:1');
    expect(orphan.toolName).toBe('grep');
    expect(orphan.callMessageIndex).toBeUndefined();
    expect(orphan.callArguments).toBeUndefined();
  });

  it('spans a conversation from its request to the next request, growing while open', () => {
    const messages = sampleSession();
    const ledger = indexTranscript(messages.slice(0, 5), options);
    expect(object(ledger, 'conversation:user:1').span).toEqual({ start: 1, end: 5 });
    ledger.append(messages.slice(5));
    expect(object(ledger, 'conversation:user:1').span).toEqual({ start: 1, end: 11 });
    expect(object(ledger, 'conversation:user:2').span).toEqual({ start: 11, end: messages.length });
    expect(object(ledger, 'system:1').span).toEqual({ start: 0, end: 1 });
    expect(object(ledger, 'function:bash:2').span).toEqual({ start: 5, end: 6 });
  });

  it('finds the conversation holding each message', () => {
    const ledger = indexTranscript(sampleSession(), options);
    expect(ledger.conversationAt(0)).toBeUndefined();
    expect(ledger.conversationAt(1)?.id).toBe('conversation:user:1');
    expect(ledger.conversationAt(10)?.id).toBe('conversation:user:1');
    expect(ledger.conversationAt(11)?.id).toBe('conversation:user:2');
    expect(ledger.conversationAt(14)?.id).toBe('conversation:user:2');
  });

  it('marks errors from the isError flag and from the output text', () => {
    const errorOutputs = [
      'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 1',
      'error: could not compile `app`',
      'fatal: not a git repository',
      'running\nFAILED tests/test_a.py::test_b',
      'Error: ENOENT, no such file',
      '<returncode>2</returncode>\n<output>boom</output>',
    ];
    const clean = [
      'all good, 0 errors found',
      'the word error inside a sentence',
      '<returncode>0</returncode>',
    ];
    const messages: Message[] = [userMessage('run things')];
    [...errorOutputs, ...clean].forEach((output, index) => {
      messages.push(...toolRound(`c${index}`, 'bash', { command: `step ${index}` }, output));
    });
    messages.push(...toolRound('flagged', 'bash', { command: 'make' }, 'done', { isError: true }));
    const ledger = indexTranscript(messages, options);
    const flags = ledger.objects.filter((entry) => entry.kind === 'function').map((entry) => entry.isError);
    expect(flags).toEqual([...errorOutputs.map(() => true), ...clean.map(() => false), true]);
  });

  it('detects an error at the end of a long output', () => {
    const output = `${'ok line\n'.repeat(2000)}error: linker failed`;
    const ledger = indexTranscript(
      [userMessage('build'), ...toolRound('c', 'bash', { command: 'make' }, output)],
      options,
    );
    expect(object(ledger, 'function:bash:1').isError).toBe(true);
  });

  it('counts each message with its framing overhead and keeps a running total', () => {
    const messages = sampleSession();
    const ledger = indexTranscript(messages, options);
    expect(ledger.messageTokens).toHaveLength(messages.length);
    messages.forEach((message, index) => {
      expect(ledger.messageTokens[index]).toBe(countMessageTokens(approximateTokenCounter, message));
    });
    expect(ledger.totalTokens).toBe(ledger.messageTokens.reduce((sum, value) => sum + value, 0));
    expect(object(ledger, 'function:read_file:1').tokens).toBe(approximateTokenCounter.count(PARSER_SOURCE));
  });
});

describe('indexTranscript: references', () => {
  it('records later assistant and user messages that mention an anchor', () => {
    const ledger = indexTranscript(sampleSession(), options);
    // Message 6 names ValueError, parse_line and src/parser.py.
    expect(object(ledger, 'function:read_file:1').references).toEqual([6]);
    expect(object(ledger, 'function:bash:2').references).toEqual([6, 8]);
    // Message 14 names build_parser and cli.py.
    expect(object(ledger, 'function:read_file:5').references).toEqual([14]);
  });

  it('does not count tool output that echoes an anchor as a reference', () => {
    const ledger = indexTranscript(
      [
        userMessage('look'),
        ...toolRound('c1', 'read_file', { path: 'a.txt' }, 'see config/settings_local.yaml'),
        ...toolRound('c2', 'read_file', { path: 'b.txt' }, 'also config/settings_local.yaml'),
      ],
      options,
    );
    expect(object(ledger, 'function:read_file:1').references).toEqual([]);
  });

  it('never records a reference from the object itself or from an earlier message', () => {
    const ledger = indexTranscript(
      [
        userMessage('use parse_config in src/config.py'),
        ...toolRound('c1', 'read_file', { path: 'src/config.py' }, 'def parse_config(): ...'),
      ],
      options,
    );
    // The call (message 1) names the request's path; the request, made before the read, is no
    // reference to the read, and the read's own output is no reference to itself.
    expect(object(ledger, 'conversation:user:1').references).toEqual([1]);
    expect(object(ledger, 'function:read_file:1').references).toEqual([]);
  });

  it('records a reference once per message even when several anchors match', () => {
    const ledger = indexTranscript(
      [
        userMessage('go'),
        ...toolRound('c1', 'read_file', { path: 'src/a.py' }, 'def load_rows(): pass\ndef save_rows(): pass'),
        assistantMessage('load_rows and save_rows in src/a.py both need work'),
      ],
      options,
    );
    expect(object(ledger, 'function:read_file:1').references).toEqual([3]);
  });

  it('ignores anchors held by too many objects', () => {
    const messages: Message[] = [userMessage('start')];
    for (let index = 0; index < 30; index += 1) {
      messages.push(
        ...toolRound(`c${index}`, 'bash', { command: `step_${index}` }, `shared_marker run ${index}`),
      );
    }
    messages.push(assistantMessage('the shared_marker is everywhere; step_3 matters'));
    const ledger = indexTranscript(messages, options);
    const functions = ledger.objects.filter((entry) => entry.kind === 'function');
    const referenced = functions.filter((entry) => entry.references.length > 0).map((entry) => entry.id);
    expect(referenced).toEqual(['function:bash:4']);
  });

  it('references user requests from later turns', () => {
    const ledger = indexTranscript(sampleSession(), options);
    expect(object(ledger, 'conversation:user:1').references).toEqual([2, 4, 6, 8]);
  });
});

describe('pins', () => {
  it('pins the system prompt and the first user request by default', () => {
    const ledger = indexTranscript(sampleSession(), options);
    const pinned = ledger.objects.filter((entry) => entry.pinned);
    expect(pinned.map((entry) => [entry.id, entry.pinReason])).toEqual([
      ['system:1', 'system prompt'],
      ['conversation:user:1', 'first user request (task goal)'],
    ]);
    expect(defaultPin(object(ledger, 'conversation:user:2'))).toBeUndefined();
  });

  it('takes a custom pin rule with the message that holds the object', () => {
    const seen: string[] = [];
    const ledger = indexTranscript(sampleSession(), {
      tokenCounter: approximateTokenCounter,
      pin: (entry, message) => {
        seen.push(`${entry.id}:${message.role}`);
        return entry.toolName === 'edit_file' ? 'edits stay' : undefined;
      },
    });
    expect(seen).toContain('function:edit_file:3:tool');
    expect(seen).toContain('system:1:system');
    expect(ledger.objects.filter((entry) => entry.pinned).map((entry) => entry.id)).toEqual([
      'function:edit_file:3',
    ]);
    expect(object(ledger, 'function:edit_file:3').pinReason).toBe('edits stay');
  });
});

describe('countMessageTokens', () => {
  it('adds the framing overhead, counts calls by name and arguments, and images at a fixed budget', () => {
    const counter = approximateTokenCounter;
    expect(countMessageTokens(counter, { role: 'user', parts: [] })).toBe(MESSAGE_OVERHEAD_TOKENS);
    expect(countMessageTokens(counter, userMessage('abcdefgh'))).toBe(MESSAGE_OVERHEAD_TOKENS + 2);
    const call = assistantCalls([toolCall('c', 'bash', '{"a":1}')]);
    expect(countMessageTokens(counter, call)).toBe(MESSAGE_OVERHEAD_TOKENS + counter.count('bash {"a":1}'));
    const image: Message = {
      role: 'user',
      parts: [{ type: 'image', ref: 'https://example.com/a.png', source: 'url' }],
    };
    expect(countMessageTokens(counter, image)).toBe(MESSAGE_OVERHEAD_TOKENS + 765);
    const mixed: Message = {
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: 'c',
          name: 'screenshot',
          content: [
            { type: 'text', text: 'abcd' },
            { type: 'image', ref: 'file-1', source: 'file-id' },
          ],
        },
      ],
    };
    expect(countMessageTokens(counter, mixed)).toBe(MESSAGE_OVERHEAD_TOKENS + 1 + 765);
  });
});

describe('with a real tokenizer', () => {
  const o200k = createTokenCounter('o200k_base');

  it('counts object and message tokens with o200k_base', () => {
    const ledger = indexTranscript([userMessage('hello world')], { tokenCounter: o200k });
    expect(object(ledger, 'conversation:user:1').tokens).toBe(2);
    expect(ledger.messageTokens[0]).toBe(2 + MESSAGE_OVERHEAD_TOKENS);
  });

  it('never throws on special-token text in a transcript', () => {
    const messages = [
      userMessage('print <|endoftext|> please'),
      ...toolRound('c', 'bash', { command: 'echo "<|endoftext|>"' }, '<|endoftext|><|im_start|>'),
    ];
    const ledger = indexTranscript(messages, { tokenCounter: o200k });
    expect(object(ledger, 'function:bash:1').tokens).toBeGreaterThan(0);
    expect(ledger.totalTokens).toBeGreaterThan(0);
  });
});

describe('helpers', () => {
  it('argumentValuesText lists argument values one per line, nested included', () => {
    expect(argumentValuesText('{"path":"src/a.py","range":[1,20],"opts":{"recursive":true}}')).toBe(
      'src/a.py\n1\n20\ntrue',
    );
    expect(argumentValuesText('not json at all')).toBe('not json at all');
    expect(argumentValuesText('')).toBe('');
  });

  it("messageReferenceText leaves out a runner's envelope before a command's output, and only that", () => {
    const run = (content: string) =>
      messageReferenceText(toolMessage(toolResult('c1', 'exec_command', content)));
    expect(
      run(
        'Chunk ID: a696c4\nWall time: 0.6197 seconds\nProcess exited with code 0\nOriginal token count: 379\nOutput:\n## main\n',
      ),
    ).toBe('## main\n');
    expect(run('Wall time: 3.5276 seconds\nOutput:\n{"ok":true}')).toBe('{"ok":true}');
    // No `Output:` line closing it: a header of the output itself (an error, a listing) stays.
    expect(run('Error: ENOENT: no such file src/a.ts\n')).toBe('Error: ENOENT: no such file src/a.ts\n');
    // `Output:` further down, after the output began, is the output's own text.
    const own = 'FAILED tests/test_io.py::test_read\nExpected: 4096\nReceived: 0\nOutput:\nx\n';
    expect(run(own)).toBe(own);
  });

  it('rankAnchors puts errors and paths first and keeps first-seen order among equals', () => {
    const ranked = rankAnchors([
      { kind: 'quoted', value: 'a quoted value' },
      { kind: 'identifier', value: 'parse_line' },
      { kind: 'path', value: 'b.py' },
      { kind: 'error', value: 'KeyError' },
      { kind: 'path', value: 'a.py' },
    ]);
    expect(ranked.map((anchor) => anchor.value)).toEqual([
      'KeyError',
      'b.py',
      'a.py',
      'parse_line',
      'a quoted value',
    ]);
  });
});

describe('recovery key tags', () => {
  const transcript = (output: string): Message[] => [
    systemMessage('You are an agent.'),
    userMessage('Fix the build.'),
    ...toolRound('call_1', 'read_file', { path: 'a.ts' }, 'export const a = 1;'),
    ...toolRound('call_2', 'read_file', { path: 'b.ts' }, output),
  ];

  it('tag content ending at or after the message keys are tagged from, by the content chain there', () => {
    const ledger = indexTranscript(transcript('export const b = 2;'), options);
    expect(ledger.keyTag(6)).toBe('');
    ledger.keysTaggedFrom = 5;
    expect(ledger.keyTag(5)).toBe('');
    expect(ledger.keyTag(6)).toBe(`~${ledger.chain[5]!.slice(0, 6)}`);
    // Ids stay as the prefix numbers them; other content at or before the end, another tag.
    const other = indexTranscript(transcript('export const b = 3;'), options);
    other.keysTaggedFrom = 5;
    expect(ids(other)).toEqual(ids(ledger));
    expect(other.keyTag(6)).not.toBe(ledger.keyTag(6));
    expect(other.keyTag(4)).toBe('');
  });
});
