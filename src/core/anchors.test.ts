import { describe, expect, it } from 'vitest';
import { type Anchor, anchorValues, anchorWeight, callExpressions, extractAnchors } from './anchors.js';

function valuesOfKind(textValue: string, kind: Anchor['kind']): string[] {
  return extractAnchors(textValue)
    .filter((anchor) => anchor.kind === kind)
    .map((anchor) => anchor.value);
}

describe('extractAnchors', () => {
  it('finds relative, absolute, dotted and home paths, and bare file names with known extensions', () => {
    const paths = valuesOfKind(
      'Open src/core/ledger.ts, ./lib/util.py, ../docs/guide.md, /etc/hosts and ~/notes/todo.txt; see README.md and package.json.',
      'path',
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        'src/core/ledger.ts',
        './lib/util.py',
        '../docs/guide.md',
        '/etc/hosts',
        '~/notes/todo.txt',
        'README.md',
        'package.json',
      ]),
    );
  });

  it('does not take a file name with an unknown extension for a path', () => {
    expect(valuesOfKind('wrote foo.xyz', 'path')).toEqual([]);
  });

  it('does not take fractions or protocol-relative slashes for paths', () => {
    expect(valuesOfKind('3/4 of the tests, //comment', 'path')).toEqual([]);
  });

  it('finds URLs without trailing punctuation, and no path fragment of them', () => {
    const anchors = extractAnchors('See https://example.com/docs/api?x=1, then http://foo.org/a/b.');
    expect(anchors.filter((anchor) => anchor.kind === 'url').map((anchor) => anchor.value)).toEqual([
      'https://example.com/docs/api?x=1',
      'http://foo.org/a/b',
    ]);
    expect(anchors.filter((anchor) => anchor.kind === 'path')).toEqual([]);
  });

  it('finds error names, but not the bare word Error', () => {
    expect(
      valuesOfKind(
        'raised ValueError, then TypeError: bad; ModuleNotFoundError; AssertionFailure; Error',
        'error',
      ),
    ).toEqual(['ValueError', 'TypeError', 'ModuleNotFoundError', 'AssertionFailure']);
  });

  it('finds hex hashes that mix letters and digits, not plain numbers or plain words', () => {
    const anchors = extractAnchors('commit 3f2a9c1 and abcdef1234567890abcdef; deadbeef; 1234567; abc12');
    expect(anchors.filter((anchor) => anchor.kind === 'hash').map((anchor) => anchor.value)).toEqual([
      '3f2a9c1',
      'abcdef1234567890abcdef',
    ]);
    expect(anchors.find((anchor) => anchor.value === 'deadbeef')).toBeUndefined();
    expect(anchors.find((anchor) => anchor.value === 'abc12')).toBeUndefined();
    expect(anchors.find((anchor) => anchor.value === '1234567')?.kind).toBe('number');
  });

  it('finds snake_case, camelCase, PascalCase, dotted and :: qualified identifiers', () => {
    expect(
      valuesOfKind('call parse_args, fooBar, FooBar, os.path.join, std::vector and __init__', 'identifier'),
    ).toEqual(['parse_args', 'fooBar', 'FooBar', 'os.path.join', 'std::vector', '__init__']);
  });

  it('ignores plain words and noise', () => {
    expect(
      extractAnchors(
        'This is the plan, and that is fine: e.g. we run it, i.e. etc. Then we stop. Foo vs bar.',
      ),
    ).toEqual([]);
  });

  it('finds numbers of three or more digits and decimals, not small counts or units', () => {
    expect(
      valuesOfKind('port 8080, pi 3.14, version 1.2.3, 42 files, offset -500, v2, 12px', 'number'),
    ).toEqual(['8080', '3.14', '1.2.3', '-500']);
  });

  it('finds quoted values in backticks, double and single quotes', () => {
    expect(
      valuesOfKind(
        'set `max_tokens` to "hello world" and \'abc def\'; skip "ab" and ` x ` and "!!!"',
        'quoted',
      ),
    ).toEqual(['hello world', 'abc def']);
    // A backticked identifier is already an identifier anchor: it is not repeated as quoted.
    expect(anchorValues('set `max_tokens`').filter((value) => value === 'max_tokens')).toHaveLength(1);
  });

  it('deduplicates, keeping the first kind, and returns values in a stable order', () => {
    const textValue = 'src/app.ts failed with KeyError; src/app.ts again; KeyError again; src/app.ts';
    const anchors = extractAnchors(textValue);
    expect(anchors.map((anchor) => anchor.value)).toEqual(['src/app.ts', 'app.ts', 'KeyError']);
    expect(new Set(anchors.map((anchor) => anchor.value)).size).toBe(anchors.length);
    expect(extractAnchors(textValue)).toEqual(anchors);
  });

  it('orders anchors by kind first (urls, paths, errors, hashes, identifiers, numbers, quoted)', () => {
    const order: Anchor['kind'][] = ['url', 'path', 'error', 'hash', 'identifier', 'number', 'quoted'];
    const kinds = extractAnchors(
      '"quoted value" 12345 parse_args a1b2c3d4 KeyError lib/x.py https://a.io/b',
    ).map((anchor) => anchor.kind);
    expect(new Set(kinds)).toEqual(new Set(order));
    const ranks = kinds.map((kind) => order.indexOf(kind));
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
  });

  it('skips values longer than 200 characters', () => {
    const long = `${'a'.repeat(120)}_${'b'.repeat(120)}`;
    expect(anchorValues(long)).toEqual([]);
  });

  it('returns nothing for empty text', () => {
    expect(extractAnchors('')).toEqual([]);
  });
});

describe('callExpressions', () => {
  it('finds calls with their arguments, one level deep, once each and in order', () => {
    const code = [
      'if is_nil(subagent_id) do',
      '  self.update(kwargs)',
      '  @decorator(name="x")',
      '  outer(inner(a), b)',
      '  is_nil(subagent_id)',
    ].join('\n');
    expect(callExpressions(code).map((anchor) => anchor.value)).toEqual([
      'is_nil(subagent_id)',
      'self.update(kwargs)',
      '@decorator(name="x")',
      'inner(a)',
    ]);
    expect(callExpressions(code).every((anchor) => anchor.kind === 'call')).toBe(true);
  });

  it('skips calls whose arguments run over a line or 40 characters', () => {
    expect(callExpressions('f(a,\nb)')).toEqual([]);
    expect(callExpressions(`g(${'x'.repeat(41)})`)).toEqual([]);
  });

  it('are not anchors: the judge does not count them as needed', () => {
    expect(anchorValues('call self.update(kwargs) now')).not.toContain('self.update(kwargs)');
  });
});

describe('anchorWeight', () => {
  it('ranks errors over paths and URLs over hashes over identifiers and numbers over quoted values', () => {
    const weight = (kind: Anchor['kind']) => anchorWeight({ kind, value: 'x' });
    expect(weight('error')).toBeGreaterThan(weight('path'));
    expect(weight('path')).toBe(weight('url'));
    expect(weight('url')).toBeGreaterThan(weight('hash'));
    expect(weight('hash')).toBeGreaterThan(weight('identifier'));
    expect(weight('identifier')).toBeGreaterThanOrEqual(weight('number'));
    expect(weight('identifier')).toBeGreaterThan(weight('quoted'));
    expect(weight('number')).toBeGreaterThan(weight('quoted'));
  });
});
