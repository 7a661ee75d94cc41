import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { extractJson } from './extract-json.js';

describe('extractJson', () => {
  it('reads a bare object', () => {
    expect(extractJson('{"operations":[{"op":"fold","id":"function:bash:3"}]}')).toEqual({
      operations: [{ op: 'fold', id: 'function:bash:3' }],
    });
  });

  it('reads a ```json fence after leading prose, ignoring trailing remarks', () => {
    const answer = 'Here is the plan:\n\n```json\n{ "operations": [], "note": "none" }\n```\nLet me know!';
    expect(extractJson(answer)).toEqual({ operations: [], note: 'none' });
  });

  it('prefers a json-labelled fence over an earlier unlabelled one', () => {
    const answer = 'Example:\n```\n{"example": true}\n```\nAnswer:\n```JSON\n{"answer": 1}\n```';
    expect(extractJson(answer)).toEqual({ answer: 1 });
  });

  it('finds an object after prose without a fence', () => {
    expect(extractJson('Sure. The result is {"keep": ["conversation:user:1"]} as requested.')).toEqual({
      keep: ['conversation:user:1'],
    });
  });

  it('keeps braces, quotes and escapes inside strings', () => {
    const answer = 'Result: {"summary": "ran `f() { return \\"}\\" }`", "path": "C:\\\\src\\\\a.ts"}';
    expect(extractJson(answer)).toEqual({ summary: 'ran `f() { return "}" }`', path: 'C:\\src\\a.ts' });
  });

  it('skips placeholders in prose and <think> blocks', () => {
    const answer =
      '<think>Maybe {"wrong": true}?</think>Fill {id} and {op}: {"id": "function:grep:9", "op": "prune"}';
    expect(extractJson(answer)).toEqual({ id: 'function:grep:9', op: 'prune' });
  });

  it('returns the outer object, not a nested one', () => {
    expect(extractJson('{"plan": {"ops": [{"op": "mask"}]}, "confidence": 0.8}')).toEqual({
      plan: { ops: [{ op: 'mask' }] },
      confidence: 0.8,
    });
  });

  it('never returns a fragment of a broken object', () => {
    expect(() => extractJson('{"plan": {"ops": []}, "confidence": 0.8,}')).toThrow(BadInputError);
  });

  it('throws BadInputError with a preview when there is no object', () => {
    expect(() => extractJson('I cannot produce a plan for this session.')).toThrow(
      'model answer holds no JSON object: "I cannot produce a plan for this session."',
    );
    expect(() => extractJson('[1, 2, 3]')).toThrow(BadInputError);
    expect(() => extractJson('   ')).toThrow('(empty answer)');
    expect(() => extractJson('{"unterminated": ')).toThrow(BadInputError);
  });
});
