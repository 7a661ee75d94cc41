import { describe, expect, it } from 'vitest';
import {
  BadInputError,
  ERROR_TABLE,
  type ErrorCode,
  NotFoundError,
  parseJson,
  SelfGcError,
  StoreError,
  toSelfGcError,
  UpstreamError,
} from './errors.js';

describe('errors', () => {
  it('give each subclass its code and name', () => {
    const cases: Array<[SelfGcError, ErrorCode, string]> = [
      [new BadInputError('x', { messageIndex: 3 }), 'bad-input', 'BadInputError'],
      [new NotFoundError('x'), 'not-found', 'NotFoundError'],
      [new StoreError('x'), 'store-failure', 'StoreError'],
      [new UpstreamError('x', { status: 502 }), 'upstream-failure', 'UpstreamError'],
      [new UpstreamError('x', { timeout: true }), 'upstream-timeout', 'UpstreamError'],
    ];
    for (const [error, code, name] of cases) {
      expect(error).toBeInstanceOf(SelfGcError);
      expect(error.code).toBe(code);
      expect(error.name).toBe(name);
      expect(ERROR_TABLE[error.code]).toBeDefined();
    }
    expect(new BadInputError('x', { messageIndex: 3 }).messageIndex).toBe(3);
    expect(new UpstreamError('x', { status: 429 }).status).toBe(429);
  });

  it('map every code to an HTTP status and a non-zero exit code', () => {
    for (const entry of Object.values(ERROR_TABLE)) {
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.exitCode).toBeGreaterThan(0);
    }
    expect(ERROR_TABLE['bad-input'].status).toBe(400);
    expect(ERROR_TABLE['store-failure'].status).toBe(503);
  });

  it('normalise any thrown value', () => {
    const known = new StoreError('down');
    expect(toSelfGcError(known)).toBe(known);
    const wrapped = toSelfGcError(new TypeError('bad'));
    expect([wrapped.code, wrapped.message, wrapped.cause instanceof TypeError]).toEqual([
      'internal',
      'bad',
      true,
    ]);
    expect(toSelfGcError('plain').message).toBe('plain');
  });

  it('parse JSON with an error that says where', () => {
    expect(parseJson('{"a":1}', 'line 1')).toEqual({ a: 1 });
    expect(() => parseJson('{', 'sessions.jsonl line 7')).toThrow(BadInputError);
    expect(() => parseJson('{', 'sessions.jsonl line 7')).toThrow(/^sessions\.jsonl line 7: invalid JSON/);
  });
});
