import { describe, expect, it } from 'vitest';
import { loadTokenCounter } from '../tokenizers/create-token-counter.js';
import { codeLines, messageEntries } from './index-entries.js';
import { indexTranscript, type Ledger, type LedgerObject } from './ledger.js';
import {
  createShownTexts,
  describeCall,
  isMaskable,
  joinFoldParts,
  keyAnchorsOf,
  objectText,
  renderFold,
  renderMask,
  renderSpanFold,
  renderTombstone,
  shortenIndex,
  spanFoldParts,
  spanText,
  withoutIndex,
  withoutRecoveryRoute,
} from './render-replacement.js';
import { CLI_SOURCE, threeRequestSession } from './testing/sample-session.js';
import {
  assistantCalls,
  assistantMessage,
  systemMessage,
  toolCall,
  toolMessage,
  toolResult,
  userMessage,
} from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';
import { messageText } from './transcript.js';
import { FOLD_INDEX, TOMBSTONE } from './tuning.js';

function session(): Ledger {
  return indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });
}

function object(ledger: Ledger, id: string): LedgerObject {
  const found = ledger.get(id);
  if (!found) throw new Error(`no ${id}`);
  return found;
}

describe('objectText and spanText', () => {
  it('give the tool output of a function object and the messages of a conversation span', () => {
    const ledger = session();
    expect(objectText(ledger, object(ledger, 'function:read_file:6'))).toBe(CLI_SOURCE);
    expect(objectText(ledger, object(ledger, 'conversation:user:2'))).toBe(
      'Now list the modules under src and summarise them.',
    );
    expect(spanText(ledger, object(ledger, 'conversation:user:2'))).toBe(
      ledger.messages
        .slice(11, 17)
        .map((message) => messageText(message))
        .join('\n'),
    );
  });
});

describe('describeCall', () => {
  const base: LedgerObject = {
    id: 'function:bash:1',
    kind: 'function',
    messageIndex: 2,
    span: { start: 2, end: 3 },
    toolName: 'bash',
    isError: false,
    tokens: 10,
    anchors: [],
    references: [],
    pinned: false,
  };

  it('lists JSON arguments as key=value, leaving out descriptions', () => {
    expect(
      describeCall({
        ...base,
        callArguments: '{"command":"ls -la","description":"list files","timeout":30}',
      }),
    ).toBe('bash command=ls -la timeout=30');
  });

  it('shows non-JSON arguments as they are, on one line, and a bare name without arguments', () => {
    expect(describeCall({ ...base, callArguments: 'ls\n  -la' })).toBe('bash ls -la');
    expect(describeCall(base)).toBe('bash');
    expect(describeCall({ ...base, toolName: undefined as unknown as string })).toBe('tool');
  });

  it('cuts long arguments with an ellipsis', () => {
    const described = describeCall({ ...base, callArguments: JSON.stringify({ command: 'x'.repeat(500) }) });
    expect(described.length).toBeLessThanOrEqual('bash '.length + 160);
    expect(described.endsWith('…')).toBe(true);
  });
});

describe('keyAnchorsOf', () => {
  const anchors = [
    { kind: 'quoted' as const, value: 'a quoted value' },
    { kind: 'identifier' as const, value: 'parse_line' },
    { kind: 'path' as const, value: 'src/a.py' },
    { kind: 'error' as const, value: 'KeyError' },
  ];

  it('ranks by weight, honours the limit and skips what the header already says', () => {
    expect(keyAnchorsOf(anchors, {}, '')).toEqual(['KeyError', 'src/a.py', 'parse_line', 'a quoted value']);
    expect(keyAnchorsOf(anchors, { maxAnchors: 2 }, '')).toEqual(['KeyError', 'src/a.py']);
    expect(keyAnchorsOf(anchors, {}, 'read_file path=src/a.py')).toEqual([
      'KeyError',
      'parse_line',
      'a quoted value',
    ]);
  });

  it('skips a value that an anchor already taken contains', () => {
    const nested = [
      { kind: 'path' as const, value: 'django/forms/forms.py' },
      { kind: 'path' as const, value: 'forms.py' },
      { kind: 'identifier' as const, value: 'forms.Form' },
      { kind: 'identifier' as const, value: 'Form' },
    ];
    expect(keyAnchorsOf(nested, { maxAnchors: 3 }, '')).toEqual(['django/forms/forms.py', 'forms.Form']);
  });

  it('finds the entries a later one shows through any of their words, however many share one', () => {
    // Lines of code share their keywords; each is found through a word of its own.
    const lines = Array.from({ length: 40 }, (_, index) => ({
      kind: 'identifier' as const,
      value: `total_${index} = computeValue(${index})`,
    }));
    const wider = { kind: 'identifier' as const, value: 'print(total_7 = computeValue(7))' };
    const chosen = keyAnchorsOf([...lines, wider, lines[3]!], { maxAnchors: 100 }, '');
    expect(chosen).toHaveLength(40);
    expect(chosen[7]).toBe(wider.value);
    expect(chosen).not.toContain(lines[7]!.value);
    expect(chosen.filter((value) => value === lines[3]!.value)).toHaveLength(1);
  });

  it('puts preferred anchors first, only if the object holds them', () => {
    expect(
      keyAnchorsOf(anchors, { preferredAnchors: ['a quoted value', 'absent'], maxAnchors: 2 }, ''),
    ).toEqual(['a quoted value', 'KeyError']);
  });
});

describe('renderFold', () => {
  it('folds a function object into header, anchors and pointer', () => {
    const ledger = session();
    const folded = renderFold(ledger, object(ledger, 'function:read_file:6'));
    expect(folded.split('\n')).toEqual([
      `[folded function:read_file:6: read_file path=cli.py → ok, ${object(ledger, 'function:read_file:6').tokens} tokens]`,
      expect.stringMatching(/^anchors: .*build_parser/),
      '(exact output kept; expand("function:read_file:6") recovers it)',
    ]);
  });

  it('writes large sizes in thousands', () => {
    const ledger = session();
    const big = { ...object(ledger, 'function:read_file:6'), tokens: 2345 };
    expect(renderFold(ledger, big)).toContain('2.3k tokens');
  });

  it('folds a conversation with the request quoted and the count of messages that followed', () => {
    const ledger = session();
    const folded = renderFold(ledger, object(ledger, 'conversation:user:1'), { summary: 'fixed the parser' });
    const lines = folded.split('\n');
    expect(lines[0]).toBe(
      '[folded conversation:user:1: user asked "The test tests/test_parser.py fails. The parser lives in src/parser.py; please fix it."; 10 messages followed]',
    );
    expect(lines[1]).toBe('fixed the parser');
    expect(lines[2]).toMatch(/^anchors: .*ValueError/);
    expect(lines[3]).toBe('(exact messages kept; expand("conversation:user:1") recovers them)');
  });
});

describe('fold indexes read tool-call arguments as the agent wrote them', () => {
  // A script written through a tool call: in the call's JSON its quotes are escaped and its lines
  // joined by \n, so indexing the raw JSON would list `nimport` and miss "ISSUE REPRODUCED".
  const script = 'import sys\nprint("ISSUE REPRODUCED")\nsys.exit(1)';
  // The call expressions of the script come after its anchors.
  const ledger = indexTranscript(
    [
      systemMessage('You are a coding agent.'),
      userMessage('Reproduce the bug.'),
      assistantCalls([toolCall('call_1', 'bash', { command: `cat > repro_case.py <<EOF\n${script}\nEOF` })]),
      toolMessage(toolResult('call_1', 'bash', '')),
      assistantCalls([toolCall('call_2', 'bash', { command: 'python repro_case.py' })]),
      toolMessage(toolResult('call_2', 'bash', 'ISSUE REPRODUCED', { isError: true })),
    ],
    { tokenCounter: approximateTokenCounter },
  );
  const request = object(ledger, 'conversation:user:1');

  it('in a span fold', () => {
    const anchors = renderSpanFold(ledger, request, 4, { maxAnchors: 50 }).split('\n')[1] ?? '';
    expect(anchors).toContain('ISSUE REPRODUCED');
    expect(anchors).toContain('repro_case.py');
    expect(anchors).toContain('print("ISSUE REPRODUCED")');
    expect(anchors).not.toMatch(/nimport|nsys/);
    const entries = spanFoldParts(ledger, request, 4, { maxAnchors: 50 }).anchors;
    expect(entries.indexOf('sys.exit(1)')).toBeGreaterThan(
      entries.findIndex((entry) => entry.includes('repro_case.py')),
    );
  });

  it('in a span fold, not what the request, which stays, already says', () => {
    const header = renderSpanFold(ledger, request, 4, { maxAnchors: 50 });
    const asked = indexTranscript(
      [
        systemMessage('You are a coding agent.'),
        userMessage('Reproduce the bug with repro_case.py.'),
        ...ledger.messages.slice(2),
      ],
      { tokenCounter: approximateTokenCounter },
    );
    const folded = renderSpanFold(asked, object(asked, 'conversation:user:1'), 4, { maxAnchors: 50 });
    // Without the request saying it, the index shows it: in the line the agent ran, which takes
    // the place of the name it shows.
    const entries = (transcript: typeof ledger) =>
      spanFoldParts(transcript, object(transcript, 'conversation:user:1'), 4, { maxAnchors: 50 }).anchors;
    expect(header).toContain('cat > repro_case.py <<EOF');
    expect(entries(ledger)).toContain('cat > repro_case.py <<EOF');
    expect(entries(ledger)).not.toContain('repro_case.py');
    expect(entries(asked)).not.toContain('repro_case.py');
    expect(folded).toContain('ISSUE REPRODUCED');
  });

  it('in the fold of a whole conversation', () => {
    const anchors = renderFold(ledger, request, { maxAnchors: 50 }).split('\n')[1] ?? '';
    expect(anchors).toContain('ISSUE REPRODUCED');
    expect(anchors).not.toMatch(/nimport|nsys/);
  });
});

describe('codeLines', () => {
  it("keeps short lines that look like code in any language, without a listing's line numbers, each once", () => {
    const listing = [
      '   250→    def has_key(self, key, version=None):',
      '   251→        return cursor.fetchone() is not None',
      '252\t        return cursor.fetchone() is not None',
      '253:        pass',
      'All tests passed and nothing else to say',
      `        x = ${'y'.repeat(90)}`,
      'if ok:',
      '    if existing_count > 0 do',
      '  @sha ~r/\\A[0-9a-f]{40}\\z/',
      '| name | value | notes |',
    ].join('\n');
    expect(codeLines(listing).map((line) => line.value)).toEqual([
      'def has_key(self, key, version=None):',
      'return cursor.fetchone() is not None',
      'if existing_count > 0 do',
      '@sha ~r/\\A[0-9a-f]{40}\\z/',
    ]);
  });
});

describe('fold indexes keep short lines of code after the anchors', () => {
  const source = [
    'class DatabaseCache:',
    ...Array.from({ length: 30 }, (_, index) => `    value_${index} = compute_${index}(key)`),
    '    def has_key(self, key):',
    '        return cursor.fetchone() is not None',
  ].join('\n');
  const ledger = indexTranscript(
    [
      systemMessage('You are a coding agent.'),
      userMessage('Fix the cache.'),
      assistantCalls(
        [toolCall('call_1', 'bash', { command: 'cat -n cache/db.py' })],
        'Looking at the file: it has = signs (and colons: here) in prose.',
      ),
      toolMessage(toolResult('call_1', 'bash', source)),
      assistantCalls([toolCall('call_2', 'bash', { command: 'python -m pytest' })]),
      toolMessage(toolResult('call_2', 'bash', '1 passed')),
      assistantCalls(
        [toolCall('call_3', 'bash', { command: 'grep -rn solve sympy/solvers' })],
        'Now I search the package for the solver:\n\n```bash\nls -R sympy | grep diophantine\n```',
      ),
      toolMessage(
        toolResult('call_3', 'bash', 'sympy/solvers/diophantine.py\nnothing else matched the pattern here'),
      ),
    ],
    { tokenCounter: approximateTokenCounter },
  );
  const request = object(ledger, 'conversation:user:1');

  it("in a span fold, from what tools returned, not from the agent's prose", () => {
    const folded = renderSpanFold(ledger, request, 4, {
      maxAnchors: Number.POSITIVE_INFINITY,
      maxAnchorChars: 4000,
    });
    expect(folded).toContain('return cursor.fetchone() is not None');
    expect(folded).toContain('value_3 = compute_3(key)');
    expect(folded).not.toContain('it has = signs');
    // Anchors come first: with little room, the names stay and the lines go.
    const small = renderSpanFold(ledger, request, 4, {
      maxAnchors: Number.POSITIVE_INFINITY,
      maxAnchorChars: 400,
    });
    expect(small).toContain('cache/db.py');
    expect(small).not.toContain('return cursor.fetchone() is not None');
  });

  it("in a span fold, the agent's own commands, passed to tools or fenced in its text, whatever they look like", () => {
    const folded = renderSpanFold(ledger, request, 8, {
      maxAnchors: Number.POSITIVE_INFINITY,
      maxAnchorChars: 4000,
    });
    expect(folded).toContain('ls -R sympy | grep diophantine');
    expect(folded).toContain('grep -rn solve sympy/solvers');
    expect(folded).toContain('python -m pytest');
    // Prose stays out, and so do lines of output that do not look like code.
    expect(folded).not.toContain('Now I search the package');
    expect(folded).toContain('sympy/solvers/diophantine.py');
    expect(folded).not.toContain('nothing else matched');
  });

  it('in a span fold, the commands a text-protocol agent wrote as XML, not its thinking', () => {
    const cline = indexTranscript(
      [
        systemMessage('You are Cline.'),
        userMessage('<task>\nFix the cache.\n</task>'),
        assistantMessage(
          '<thinking>\nThe solver lives somewhere under sympy, let me look.\n</thinking>\n\n<execute_command>\n<command>ls -R sympy | grep diophantine</command>\n<requires_approval>false</requires_approval>\n</execute_command>',
        ),
        userMessage(
          "[execute_command for 'ls -R sympy | grep diophantine'] Result:\nsympy/solvers/diophantine.py",
        ),
        assistantMessage('Done.'),
      ],
      { tokenCounter: approximateTokenCounter },
    );
    const folded = renderSpanFold(cline, object(cline, 'conversation:user:1'), 4, {
      maxAnchors: Number.POSITIVE_INFINITY,
      maxAnchorChars: 4000,
    });
    expect(folded).toContain('ls -R sympy | grep diophantine');
    expect(folded).not.toContain('let me look');
    // The agent's own line, not only the result's header that repeats it.
    const lines = messageEntries(cline.messages[2]!).lines.map((line) => line.value);
    expect(lines).toEqual(['ls -R sympy | grep diophantine']);
  });

  it('in the fold of a whole conversation', () => {
    expect(renderFold(ledger, request, { maxAnchors: 200 })).toContain(
      'return cursor.fetchone() is not None',
    );
  });
});

describe('an index that lists a longer entry showing names it listed before', () => {
  // The agent names `forms.py` and `handler_1`; the output it read names the full path and a
  // longer name that holds `handler_1` only as part of a word.
  const ledger = indexTranscript(
    [
      userMessage('Why does the form reject empty input?'),
      assistantCalls(
        [toolCall('c1', 'read_file', { path: 'forms.py' })],
        'I will read forms.py and its handler_1.',
      ),
      toolMessage(
        toolResult('c1', 'read_file', 'django/forms/forms.py defines handler_1_0 and clean_fields'),
      ),
      assistantCalls([toolCall('c2', 'bash', { command: 'pytest -q' })], 'Now the tests.'),
      toolMessage(toolResult('c2', 'bash', '3 passed')),
    ],
    { tokenCounter: approximateTokenCounter },
  );
  const request = ledger.get('conversation:user:1')!;
  const anchors = spanFoldParts(ledger, request, 3, { maxAnchors: 50 }).anchors;

  it('lists the longer entry in the place of the first name it shows, and that name no more', () => {
    expect(anchors).toContain('django/forms/forms.py');
    expect(anchors).not.toContain('forms.py');
    expect(anchors.indexOf('django/forms/forms.py')).toBeLessThan(anchors.indexOf('clean_fields'));
    // A cut index keeps it where the name stood.
    const first = shortenIndex({ head: [], anchors, tail: [] }, anchors[0]!.length + 2).anchors;
    expect(first.join(' ')).toContain('forms.py');
  });

  it('keeps a name that the longer entry holds only inside a longer word', () => {
    expect(anchors).toContain('handler_1');
    expect(anchors).toContain('handler_1_0');
  });
});

describe('shortenIndex and withoutIndex', () => {
  const parts = {
    head: [
      '[folded conversation:user:1@9: the 8 messages of work that followed conversation:user:1 (4 tool calls)]',
    ],
    anchors: ['def handler(request, code):', 'src/app.py', 'E2E-TOKEN-1a2b'],
    tail: ['(exact messages kept; expand("conversation:user:1@9") recovers them)'],
  };

  it('keeps the first whole entries that fit, an entry with a comma in it included', () => {
    const first = parts.anchors[0]!.length + 2;
    expect(shortenIndex(parts, first + 12).anchors).toEqual(parts.anchors.slice(0, 2));
    expect(shortenIndex(parts, first + 11).anchors).toEqual(parts.anchors.slice(0, 1));
    expect(shortenIndex(parts, 3).anchors).toEqual([]);
  });

  it('renders the parts as the fold summary, and takes the index line out of one', () => {
    const ledger = session();
    const request = object(ledger, 'conversation:user:1');
    const folded = spanFoldParts(ledger, request, 4, { maxAnchors: 50 });
    expect(joinFoldParts(folded)).toBe(renderSpanFold(ledger, request, 4, { maxAnchors: 50 }));
    expect(withoutIndex(joinFoldParts(folded))).toBe(joinFoldParts({ ...folded, anchors: [] }));
    expect(joinFoldParts({ ...parts, anchors: [] })).toBe([...parts.head, ...parts.tail].join('\n'));
  });

  it('lists the names apart by a space, then the entries with blanks apart by semicolons', () => {
    expect(joinFoldParts(parts).split('\n')[1]).toBe(
      'anchors: src/app.py E2E-TOKEN-1a2b; def handler(request, code):',
    );
    const names = { ...parts, anchors: ['src/app.py', 'E2E-TOKEN-1a2b'] };
    expect(joinFoldParts(names).split('\n')[1]).toBe('anchors: src/app.py E2E-TOKEN-1a2b');
    const phrases = { ...parts, anchors: ['def handler(request, code):', 'git diff --stat'] };
    expect(joinFoldParts(phrases).split('\n')[1]).toBe(
      'anchors: def handler(request, code):; git diff --stat',
    );
  });

  it('takes fewer tokens than a list apart by commas', async () => {
    const counter = await loadTokenCounter('o200k_base');
    const anchors = Array.from({ length: 60 }, (_, index) => `src/modules/m${index}.py`);
    const listed = joinFoldParts({ ...parts, anchors });
    const commas = [...parts.head, `anchors: ${anchors.join(', ')}`, ...parts.tail].join('\n');
    expect(counter.count(listed)).toBeLessThan(counter.count(commas) - 50);
  });
});

describe('renderTombstone', () => {
  it('is one line naming the id, the call, failure and size', () => {
    const ledger = session();
    expect(renderTombstone(ledger, object(ledger, 'function:bash:2'))).toBe(
      `[pruned function:bash:2: bash command=pytest tests/test_parser.py, failed, ${object(ledger, 'function:bash:2').tokens} tokens]`,
    );
    const tombstone = renderTombstone(ledger, object(ledger, 'conversation:user:3'));
    expect(tombstone).toMatch(
      /^\[pruned conversation:user:3: "Thanks\. Now add a --verbose flag to cli\.py\."; its work named /,
    );
    expect(tombstone).not.toContain('\n');
  });

  it("of a request names the best entries of its work, as its span fold's index would, within a bound", () => {
    const ledger = session();
    const request = object(ledger, 'conversation:user:3');
    const named = (tombstone: string) => tombstone.split('; its work named ')[1]!.slice(0, -1).split(', ');
    const index = spanFoldParts(ledger, request, request.span.end, { maxAnchors: 1_000 }).anchors;
    const listed = named(renderTombstone(ledger, request));
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.length).toBeLessThanOrEqual(TOMBSTONE.requestEntries);
    expect(listed.join(', ').length).toBeLessThanOrEqual(
      TOMBSTONE.requestEntries * FOLD_INDEX.charsPerAnchor,
    );
    expect(listed).toEqual(index.slice(0, listed.length));
    // By the valuator's score when there is one: the entry it ranks first is named first.
    const work = ledger.messages.slice(request.span.start + 1, request.span.end);
    const anchors = new Set(
      work.flatMap((message) => messageEntries(message).anchors.map((entry) => entry.value)),
    );
    // The anchor the index shows last (alone, or in a line that took its place).
    const shownAt = (value: string) => index.findIndex((entry) => entry.includes(value));
    const favourite = [...anchors]
      .filter((value) => shownAt(value) > 0)
      .sort((a, b) => shownAt(b) - shownAt(a))[0]!;
    expect(favourite).toBeDefined();
    const scored = named(
      renderTombstone(ledger, request, { rankEntry: (entry) => (entry.value === favourite ? 1 : 0) }),
    );
    // Named first, alone or in a longer entry that shows it and took its place.
    expect(listed[0]).not.toContain(favourite);
    expect(scored[0]).toContain(favourite);
    // What stays in the view elsewhere is not named again.
    const elsewhere = named(
      renderTombstone(ledger, request, { shownElsewhere: { contains: (value) => value === listed[0] } }),
    );
    expect(elsewhere).not.toContain(listed[0]);
  });

  it('of a request with no work after it quotes the request alone', () => {
    const ledger = indexTranscript(
      [
        { role: 'user', parts: [{ type: 'text', text: 'Rename parse_file to read_tokens.' }] },
        { role: 'user', parts: [{ type: 'text', text: 'Actually, keep the name.' }] },
        { role: 'assistant', parts: [{ type: 'text', text: 'Keeping parse_file.' }] },
      ],
      { tokenCounter: approximateTokenCounter },
    );
    expect(renderTombstone(ledger, object(ledger, 'conversation:user:1'))).toBe(
      '[pruned conversation:user:1: "Rename parse_file to read_tokens."]',
    );
  });
});

describe('isMaskable and renderMask', () => {
  const lines = (count: number, prefix = 'row') =>
    Array.from({ length: count }, (_, index) => `${prefix} ${index}`);

  it('accepts long regular output only', () => {
    expect(isMaskable(lines(24).join('\n'))).toBe(true);
    expect(isMaskable(lines(23).join('\n'))).toBe(false);
    expect(isMaskable(['Traceback (most recent call last):', ...lines(30)].join('\n'))).toBe(false);
    expect(isMaskable(['diff --git a/x b/x', ...lines(30)].join('\n'))).toBe(false);
    expect(isMaskable(['@@ -1,3 +1,4 @@', ...lines(30)].join('\n'))).toBe(false);
    expect(isMaskable(lines(30, '| a | b |').join('\n'))).toBe(false);
  });

  it('keeps head, tail and structure lines, and says how many lines it hid', () => {
    const ledger = session();
    const target = object(ledger, 'function:bash:5');
    const textValue = [...lines(10, 'head'), 'FAILED test_x', ...lines(20, 'mid'), ...lines(10, 'tail')].join(
      '\n',
    );
    const masked = renderMask(target, textValue, { headLines: 2, tailLines: 3 });
    expect(masked.split('\n')).toEqual([
      'head 0',
      'head 1',
      'FAILED test_x',
      `[… 35 of 41 lines masked (function:bash:5, ${target.tokens} tokens in full); expand("function:bash:5") recovers them …]`,
      'tail 7',
      'tail 8',
      'tail 9',
    ]);
  });

  it('limits structure lines', () => {
    const ledger = session();
    const textValue = [...lines(8, 'h'), ...lines(20, 'def f'), ...lines(6, 't')].join('\n');
    const masked = renderMask(object(ledger, 'function:bash:5'), textValue, { structureLines: 3 });
    expect(masked.split('\n').filter((line) => line.startsWith('def f'))).toEqual([
      'def f 0',
      'def f 1',
      'def f 2',
    ]);
    expect(masked).toContain('[… 17 of 34 lines masked');
  });
});

describe('withoutRecoveryRoute', () => {
  it('turns every recovery pointer into a plain key, never longer, and keeps other messages as they are', () => {
    const untouched = userMessage('Please expand the tests.');
    const view = [
      untouched,
      toolMessage(
        toolResult(
          'c1',
          'bash',
          '[folded function:bash:1: ls]\n(exact output kept; expand("function:bash:1") recovers it)',
        ),
      ),
      userMessage(
        '[folded conversation:user:1@9: …]\n(exact messages kept; expand("conversation:user:1@9") recovers them)',
      ),
    ];
    const plain = withoutRecoveryRoute(view);
    expect(plain[0]).toBe(untouched);
    const texts = plain.map((message) => messageText(message));
    expect(texts[1]).toContain('(exact output kept; kept as "function:bash:1")');
    expect(texts[2]).toContain('(exact messages kept; kept as "conversation:user:1@9")');
    for (const [index, textValue] of texts.entries()) {
      expect(textValue).not.toMatch(/expand\("/);
      expect(textValue.length).toBeLessThanOrEqual(messageText(view[index]!).length);
    }
  });
});

describe('createShownTexts', () => {
  it('finds a value where its longest word stands whole, not inside a longer name', () => {
    const shown = createShownTexts();
    shown.add('edited src/core/ledger.ts and handler_1_0; see xab.c, ab, run(inspect stats)');
    expect(shown.contains('src/core/ledger.ts')).toBe(true);
    expect(shown.contains('core/ledger')).toBe(true);
    expect(shown.contains('inspect stats')).toBe(true);
    expect(shown.contains('handler_1')).toBe(false);
    // `ab` stands whole elsewhere in the text, but not where `ab.c` appears.
    expect(shown.contains('ab.c')).toBe(false);
    expect(shown.contains('src/core/other.ts')).toBe(false);
    expect(shown.contains('...')).toBe(false);
  });

  it('looks only at texts added before a position, and sees texts added after a lookup', () => {
    const shown = createShownTexts();
    shown.add('the index lists settings_loader.py', 40);
    expect(shown.contains('settings_loader.py', 40)).toBe(false);
    expect(shown.contains('settings_loader.py', 41)).toBe(true);
    expect(shown.contains('parse_config(path)')).toBe(false);
    shown.add('called parse_config(path) twice', 10);
    expect(shown.contains('parse_config(path)', 11)).toBe(true);
    expect(shown.contains('settings_loader.py', 11)).toBe(false);
  });
});
