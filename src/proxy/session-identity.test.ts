import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { type Message, text } from '../core/transcript.js';
import {
  conversationStart,
  deriveSessionIdentity,
  firstReply,
  hashApiKey,
  SESSION_HEADER,
} from './session-identity.js';
import type { JsonObject } from './wire-dialect.js';

const identify = (headers: Headers, messages: Message[], seed = '', body: JsonObject = {}) =>
  deriveSessionIdentity({ headers, body, messages, seed });

const system: Message = { role: 'system', parts: [text('You are an agent.')] };
const task: Message = { role: 'user', parts: [text('Fix the bug in src/app.ts')] };
const reply: Message = { role: 'assistant', parts: [text('Looking at it.')] };
const later: Message = { role: 'user', parts: [text('Also add a test.')] };

const bearer = (key: string, extra: Record<string, string> = {}) =>
  new Headers({ authorization: `Bearer ${key}`, ...extra });

describe('deriveSessionIdentity', () => {
  it('keeps one session for every turn of a conversation from its first reply on', () => {
    const second = identify(bearer('sk-a'), [system, task, reply]);
    const third = identify(bearer('sk-a'), [system, task, reply, later]);
    const next: Message = { role: 'assistant', parts: [text('Added.')] };
    expect(third).toEqual(second);
    expect(identify(bearer('sk-a'), [system, task, reply, later, next])).toEqual(second);
    expect(conversationStart([system, task, reply, later])).toBe(conversationStart([system, task]));
  });

  it('tells apart runs of one prompt by their first replies, call ids included', () => {
    const call = (id: string): Message => ({
      role: 'assistant',
      parts: [{ type: 'tool-call', id, name: 'read_file', arguments: '{"path":"src/app.ts"}' }],
    });
    const runA = identify(bearer('sk-a'), [system, task, call('call_a1')]).sessionId;
    const runB = identify(bearer('sk-a'), [system, task, call('call_b1')]).sessionId;
    expect(runA).not.toBe(runB);
    // Before any reply both are the conversation's start, as earlier versions derived it.
    const opening = identify(bearer('sk-a'), [system, task]).sessionId;
    expect([runA, runB]).not.toContain(opening);
    const keyHash = hashApiKey(bearer('sk-a'));
    const earlier = createHash('sha256')
      .update(`${keyHash}\0\0${conversationStart([system, task])}`, 'utf8')
      .digest('hex')
      .slice(0, 32);
    expect(opening).toBe(`auto-${earlier}`);
    // Reasoning a client drops from later requests does not move it.
    const thought: Message = {
      role: 'assistant',
      parts: [{ type: 'reasoning', text: 'plan' }, ...call('call_a1').parts],
    };
    expect(identify(bearer('sk-a'), [system, task, thought]).sessionId).toBe(runA);
    expect(firstReply([system, task])).toBe('');
  });

  it('tells conversations apart by system prompt, task and instructions seed', () => {
    const base = identify(bearer('sk-a'), [system, task]).sessionId;
    const otherTask = { role: 'user', parts: [text('Another task')] } satisfies Message;
    expect(identify(bearer('sk-a'), [system, otherTask]).sessionId).not.toBe(base);
    expect(identify(bearer('sk-a'), [task]).sessionId).not.toBe(
      identify(bearer('sk-a'), [system, task]).sessionId,
    );
    expect(identify(bearer('sk-a'), [system, task], 'be brief').sessionId).not.toBe(base);
  });

  it('namespaces every session, explicit or derived, by a hash of the key', () => {
    const explicit = { [SESSION_HEADER]: 'shared-name' };
    const a = identify(bearer('sk-a', explicit), [task]);
    const b = identify(bearer('sk-b', explicit), [task]);
    expect(a.sessionId).toBe('shared-name');
    expect(b.sessionId).toBe('shared-name');
    expect(a.storeSessionId).not.toBe(b.storeSessionId);
    expect(a.storeSessionId).toBe(`${a.keyHash}:shared-name`);
    expect(identify(bearer('sk-a'), [task]).sessionId).not.toBe(identify(bearer('sk-b'), [task]).sessionId);
  });

  it('hashes the key the same way whichever header carries it, and never shows it', () => {
    const key = 'sk-secret-123';
    expect(hashApiKey(new Headers({ 'x-api-key': key }))).toBe(hashApiKey(bearer(key)));
    const identity = identify(bearer(key), [task]);
    expect(JSON.stringify(identity)).not.toContain(key);
  });

  it('refuses an explicit session id that is empty, too long or not visible ASCII', () => {
    for (const value of ['a'.repeat(201), 'has space', 'é']) {
      expect(() => identify(bearer('k', { [SESSION_HEADER]: value }), [task])).toThrow(BadInputError);
    }
  });

  it("takes a subagent's session id back as the proxy answered it, however long its name", () => {
    const name = 'n'.repeat(200);
    const agent = { 'x-claude-code-agent-id': 'a1b2c3d4e5f6' };
    const first = identify(bearer('k', { [SESSION_HEADER]: name, ...agent }), [task]).sessionId;
    expect(first).toBe(`${name}/agent:a1b2c3d4e5f6`);
    expect(identify(bearer('k', { [SESSION_HEADER]: first, ...agent }), [task]).sessionId).toBe(first);
    // Without the agent's header it is a name like any other, and too long for one.
    expect(() => identify(bearer('k', { [SESSION_HEADER]: first }), [task])).toThrow(BadInputError);
  });

  it('keeps the hash of earlier versions for a request without a client id or an end user', () => {
    const headers = bearer('sk-a');
    const keyHash = hashApiKey(headers);
    const before = createHash('sha256')
      .update(`${keyHash}\0be brief\0${conversationStart([system, task])}`, 'utf8')
      .digest('hex')
      .slice(0, 32);
    expect(identify(headers, [system, task], 'be brief')).toMatchObject({
      sessionId: `auto-${before}`,
      source: 'auto',
    });
  });

  it('tells apart end users that open a conversation alike, without merging the conversations of one user', () => {
    const alice = identify(bearer('sk-a'), [system, task], '', { user: 'alice' }).sessionId;
    const bob = identify(bearer('sk-a'), [system, task], '', { user: 'bob' }).sessionId;
    const aliceOther = identify(bearer('sk-a'), [system, later], '', { user: 'alice' }).sessionId;
    expect(new Set([alice, bob, aliceOther]).size).toBe(3);
    expect(identify(bearer('sk-a'), [system, task], '', { safety_identifier: 'alice' }).sessionId).toBe(
      alice,
    );
  });

  it('takes the explicit header over the id the client sends, and that id over the hash', () => {
    const claude = { 'x-claude-code-session-id': '0b5e6a5e-2f4f-4d52-9d0e-6c2d1f8a7b31' };
    const fromClient = identify(bearer('sk-a', claude), [task]);
    expect(fromClient.source).toBe('cc');
    expect(fromClient.sessionId).toMatch(/^cc:0b5e6a5e-2f4f-4d52-9d0e-6c2d1f8a7b31#[0-9a-f]{16}$/);
    expect(fromClient.storeSessionId).toBe(`${fromClient.keyHash}:${fromClient.sessionId}`);
    const explicit = identify(bearer('sk-a', { ...claude, [SESSION_HEADER]: 'mine' }), [task]);
    expect(explicit).toMatchObject({ sessionId: 'mine', source: 'explicit' });
  });
});
