import { describe, expect, it } from 'vitest';
import { argumentValues, extractJudgeAnchors, judgeAnchorValues } from './anchor-extractor.js';

const kindsOf = (textValue: string) =>
  Object.fromEntries(extractJudgeAnchors(textValue).map((anchor) => [anchor.value, anchor.kind]));

describe('extractJudgeAnchors', () => {
  it('reads URLs without their closing punctuation, and not their slashed path again', () => {
    // The host and the file name still count on their own, as the agent may write them alone.
    expect(kindsOf('See https://example.com/docs/api.html, then (https://x.org/a).')).toEqual({
      'https://example.com/docs/api.html': 'url',
      'https://x.org/a': 'url',
      'api.html': 'path',
      'example.com': 'identifier',
      'x.org': 'identifier',
    });
  });

  it('reads slashed paths and bare file names with a known extension', () => {
    expect(kindsOf('Edit ./src/cache.py and ~/notes/todo.md; run setup.cfg, not the end. Of it.')).toEqual({
      './src/cache.py': 'path',
      '~/notes/todo.md': 'path',
      'cache.py': 'path',
      'todo.md': 'path',
      'setup.cfg': 'path',
    });
  });

  it('leaves fractions, dates and protocol-relative slashes out of paths', () => {
    const values = judgeAnchorValues('3/4 of runs on 12/2024 hit //cdn and a/b');
    expect(values).toContain('a/b');
    expect(values).not.toContain('3/4');
    expect(values).not.toContain('12/2024');
    expect(values.some((value) => value.startsWith('//'))).toBe(false);
  });

  it('reads error names, hex hashes and structured identifiers', () => {
    expect(kindsOf('KeyError in evict_entry at commit 3f9a2c1d; see os.path and CacheStore::get')).toEqual({
      KeyError: 'error',
      '3f9a2c1d': 'hash',
      evict_entry: 'identifier',
      'os.path': 'identifier',
      'CacheStore::get': 'identifier',
    });
  });

  it('leaves plain words, short names and stop words out', () => {
    expect(judgeAnchorValues('The test for this fails and then Error shows')).toEqual([]);
    expect(judgeAnchorValues('a_b xY e.g')).toEqual([]);
  });

  it('needs a hash to mix letters and digits, and no uppercase', () => {
    expect(judgeAnchorValues('deadbeef 1234567 ABCDEF12')).toEqual(['1234567']);
  });

  it('reads numbers of three digits or more, or with a decimal point, standing alone', () => {
    expect(kindsOf('status 404 after 2.5 s, 42 tries, v1.2.3, 12px, 3.14rc')).toEqual({
      '404': 'number',
      '2.5': 'number',
    });
    expect(judgeAnchorValues('offset -1024 and version 10.4.2')).toEqual(['-1024', '10.4.2']);
  });

  it('reads short quoted values without padding', () => {
    expect(kindsOf('set `max size` to "fast mode" or \'slow\' — not " padded" nor "ab"')).toEqual({
      'max size': 'quoted',
      'fast mode': 'quoted',
      slow: 'quoted',
    });
  });

  it('keeps each value once, with the first rule that found it', () => {
    const anchors = extractJudgeAnchors('`cache.py` and cache.py again');
    expect(anchors).toEqual([{ kind: 'path', value: 'cache.py' }]);
  });

  it('drops values past 200 characters', () => {
    const long = `${'a'.repeat(150)}_${'b'.repeat(60)}`;
    expect(judgeAnchorValues(long)).toEqual([]);
    expect(judgeAnchorValues(`${'a'.repeat(100)}_b`)).toEqual([`${'a'.repeat(100)}_b`]);
  });

  it('gives nothing for empty text', () => {
    expect(extractJudgeAnchors('')).toEqual([]);
  });
});

describe('argumentValues', () => {
  it('gives the values of JSON arguments, nested ones included, not their keys', () => {
    const text = argumentValues(
      JSON.stringify({ file_path: 'src/cache.py', edits: [{ line: 12, dry: false }], meta: { tag: 'v1' } }),
    );
    expect(text.split('\n')).toEqual(['src/cache.py', '12', 'false', 'v1']);
  });

  it('reads arguments that are not JSON as they are', () => {
    expect(argumentValues('ls -la /tmp')).toBe('ls -la /tmp');
  });
});
