import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { type Message, text } from '../core/transcript.js';
import { conversationStart, deriveSessionIdentity, hashApiKey, SESSION_HEADER } from './session-identity.js';

const system: Message = { role: 'system', parts: [text('You are an agent.')] };
const task: Message = { role: 'user', parts: [text('Fix the bug in src/app.ts')] };
const reply: Message = { role: 'assistant', parts: [text('Looking at it.')] };
const later: Message = { role: 'user', parts: [text('Also add a test.')] };

const bearer = (key: string, extra: Record<string, string> = {}) =>
  new Headers({ authorization: `Bearer ${key}`, ...extra });

describe('deriveSessionIdentity', () => {
  it('keeps one session for every turn of a conversation', () => {
    const first = deriveSessionIdentity(bearer('sk-a'), [system, task]);
    const third = deriveSessionIdentity(bearer('sk-a'), [system, task, reply, later]);
    expect(third).toEqual(first);
    expect(conversationStart([system, task, reply, later])).toBe(conversationStart([system, task]));
  });

  it('tells conversations apart by system prompt, task and instructions seed', () => {
    const base = deriveSessionIdentity(bearer('sk-a'), [system, task]).sessionId;
    const otherTask = { role: 'user', parts: [text('Another task')] } satisfies Message;
    expect(deriveSessionIdentity(bearer('sk-a'), [system, otherTask]).sessionId).not.toBe(base);
    expect(deriveSessionIdentity(bearer('sk-a'), [task]).sessionId).not.toBe(
      deriveSessionIdentity(bearer('sk-a'), [system, task]).sessionId,
    );
    expect(deriveSessionIdentity(bearer('sk-a'), [system, task], 'be brief').sessionId).not.toBe(base);
  });

  it('namespaces every session, explicit or derived, by a hash of the key', () => {
    const explicit = { [SESSION_HEADER]: 'shared-name' };
    const a = deriveSessionIdentity(bearer('sk-a', explicit), [task]);
    const b = deriveSessionIdentity(bearer('sk-b', explicit), [task]);
    expect(a.sessionId).toBe('shared-name');
    expect(b.sessionId).toBe('shared-name');
    expect(a.storeSessionId).not.toBe(b.storeSessionId);
    expect(a.storeSessionId).toBe(`${a.keyHash}:shared-name`);
    expect(deriveSessionIdentity(bearer('sk-a'), [task]).sessionId).not.toBe(
      deriveSessionIdentity(bearer('sk-b'), [task]).sessionId,
    );
  });

  it('hashes the key the same way whichever header carries it, and never shows it', () => {
    const key = 'sk-secret-123';
    expect(hashApiKey(new Headers({ 'x-api-key': key }))).toBe(hashApiKey(bearer(key)));
    const identity = deriveSessionIdentity(bearer(key), [task]);
    expect(JSON.stringify(identity)).not.toContain(key);
  });

  it('refuses an explicit session id that is empty, too long or not visible ASCII', () => {
    for (const value of ['a'.repeat(201), 'has space', 'é']) {
      expect(() => deriveSessionIdentity(bearer('k', { [SESSION_HEADER]: value }), [task])).toThrow(
        BadInputError,
      );
    }
  });
});
