import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { claudeCodeSessionOf, clientSessionHint, findClientSessionId } from './client-session-id.js';
import { responsesDialect } from './responses-dialect.js';
import { deriveSessionIdentity, SESSION_HEADER } from './session-identity.js';
import {
  type ClientRequest,
  claudeCodeRequest,
  codexRequest,
  opencodeRequest,
  sdkRequest,
} from './testing/client-requests.js';
import type { WireDialect } from './wire-dialect.js';

const DIALECTS: Record<ClientRequest['route'], WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};

/** The session id the proxy derives for a client request, as `prepareUpstream` derives it. */
function identityOf(request: ClientRequest, extraHeaders: Record<string, string> = {}) {
  const dialect = DIALECTS[request.route];
  return deriveSessionIdentity({
    headers: new Headers({ ...request.headers, ...extraHeaders }),
    body: request.body,
    messages: dialect.readTranscript(request.body),
    seed: dialect.identitySeed?.(request.body) ?? '',
  });
}

/** The client's own id in a session id, without the hash of the conversation's start. */
function clientPart(identity: { sessionId: string }): string {
  return identity.sessionId.slice(0, identity.sessionId.indexOf('#'));
}

const CC_A = '2f6d1c7a-8e0b-4b9a-a1d3-5c4e3b2a1f00';
const CC_B = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
const THREAD_A = '019ee74f-22b5-7043-b5fc-697ca0fbd5a6';
const THREAD_B = '019ee750-0a11-7c42-8e3d-2b1a0f9e8d7c';

describe('client session ids', () => {
  it.each([
    ['Claude Code ≥ 2.1.86 (header)', claudeCodeRequest({ kind: 'header', sessionId: CC_A }), `cc:${CC_A}`],
    [
      'Claude Code, legacy metadata.user_id',
      claudeCodeRequest({ kind: 'legacy-metadata', sessionId: CC_A }),
      `cc:${CC_A}`,
    ],
    [
      'Claude Code, JSON metadata.user_id',
      claudeCodeRequest({ kind: 'json-metadata', sessionId: CC_A }),
      `cc:${CC_A}`,
    ],
    ['Codex ≥ 0.131 (session-id, thread-id)', codexRequest({ thread: THREAD_A }), `codex:${THREAD_A}`],
    ['Codex, session_id', codexRequest({ thread: THREAD_A }, 'x', 'underscored'), `codex:${THREAD_A}`],
    [
      'Codex, conversation_id + session_id',
      codexRequest({ thread: THREAD_A }, 'x', 'conversation'),
      `codex:${THREAD_A}`,
    ],
    [
      'opencode, OpenAI provider',
      opencodeRequest('ses_3f2a1b0c9d8eFfGgHh'),
      'opencode:ses_3f2a1b0c9d8eFfGgHh',
    ],
    [
      'opencode, its own provider',
      opencodeRequest('ses_3f2a1b0c9d8eFfGgHh', 'opencode'),
      'opencode:ses_3f2a1b0c9d8eFfGgHh',
    ],
    ['OpenAI SDK, Chat prompt_cache_key', sdkRequest('chat', 'report-42'), 'pck:report-42'],
    ['OpenAI SDK, Responses prompt_cache_key', sdkRequest('responses', 'report-42'), 'pck:report-42'],
  ])('%s', (_name, request, expected) => {
    const identity = identityOf(request);
    expect(clientPart(identity)).toBe(expected);
    expect(identity.sessionId).toMatch(/#[0-9a-f]{16}$/);
    expect(identity.source).toBe(expected.slice(0, expected.indexOf(':')));
  });

  it('gives two `claude -p` runs of one prompt in one directory two sessions', () => {
    const first = identityOf(claudeCodeRequest({ kind: 'header', sessionId: CC_A }, 'Fix the failing test'));
    const second = identityOf(claudeCodeRequest({ kind: 'header', sessionId: CC_B }, 'Fix the failing test'));
    expect(first.sessionId).not.toBe(second.sessionId);
    // Without any client id they would have shared one: the start of both conversations is the same.
    const strip = (request: ClientRequest): ClientRequest => {
      const { 'x-claude-code-session-id': _header, ...headers } = request.headers;
      const { metadata: _metadata, ...body } = request.body;
      return { ...request, headers, body };
    };
    expect(identityOf(strip(claudeCodeRequest({ kind: 'header', sessionId: CC_A }))).sessionId).toBe(
      identityOf(strip(claudeCodeRequest({ kind: 'header', sessionId: CC_B }))).sessionId,
    );
  });

  it('gives two Codex runs with different prompts two sessions, though both open with the environment context', () => {
    const first = identityOf(codexRequest({ thread: THREAD_A }, 'Fix the failing test'));
    const second = identityOf(codexRequest({ thread: THREAD_B }, 'Add a changelog entry'));
    expect(first.sessionId).not.toBe(second.sessionId);
  });

  it("takes Codex's thread id over its session id: a forked thread has its own transcript", () => {
    const fork = identityOf(codexRequest({ thread: THREAD_B, session: THREAD_A }));
    expect(clientPart(fork)).toBe(`codex:${THREAD_B}`);
  });

  it('keeps one session when Claude Code moves the id from metadata to the header', () => {
    expect(identityOf(claudeCodeRequest({ kind: 'legacy-metadata', sessionId: CC_A })).sessionId).toBe(
      identityOf(claudeCodeRequest({ kind: 'header', sessionId: CC_A })).sessionId,
    );
  });

  it('namespaces each source, so one value from two sources names two sessions', () => {
    const value = '0b5e6a5e-2f4f-4d52-9d0e-6c2d1f8a7b31';
    const claude = identityOf(claudeCodeRequest({ kind: 'header', sessionId: value }));
    const codex = identityOf(codexRequest({ thread: value }));
    const sdk = identityOf(sdkRequest('chat', value));
    expect(new Set([claude.sessionId, codex.sessionId, sdk.sessionId]).size).toBe(3);
  });

  it('skips a malformed client id for the next source instead of refusing the request', () => {
    const request = claudeCodeRequest({ kind: 'legacy-metadata', sessionId: CC_A });
    for (const bad of ['has space', 'x'.repeat(129), 'é-accent', '../../etc']) {
      expect(clientPart(identityOf(request, { 'x-claude-code-session-id': bad }))).toBe(`cc:${CC_A}`);
    }
    const malformedEverywhere = claudeCodeRequest({ kind: 'header', sessionId: 'not valid' });
    const identity = identityOf(malformedEverywhere);
    expect(identity.source).toBe('auto');
    expect(identity.sessionId).toMatch(/^auto-[0-9a-f]{32}$/);
  });

  it("gives each conversation under one client id a session of its own: a subagent's, a side request's", () => {
    const parent = claudeCodeRequest({ kind: 'header', sessionId: CC_A }, 'Fix the failing test');
    const side = claudeCodeRequest(
      { kind: 'header', sessionId: CC_A },
      'Write a title for this conversation',
    );
    expect(clientPart(identityOf(side))).toBe(clientPart(identityOf(parent)));
    expect(identityOf(side).sessionId).not.toBe(identityOf(parent).sessionId);
    // The parent's later turns stay in its session: the start of the conversation does not move.
    const later = structuredClone(parent);
    (later.body.messages as unknown[]).push(
      { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }] },
      { role: 'user', content: 'Go on.' },
    );
    expect(identityOf(later).sessionId).toBe(identityOf(parent).sessionId);
  });

  it("joins Claude Code's agent id to the session id, explicit or the client's; a malformed one is left out", () => {
    const request = claudeCodeRequest({ kind: 'header', sessionId: CC_A });
    expect(clientPart(identityOf(request, { 'x-claude-code-agent-id': 'a1b2c3d4' }))).toBe(
      `cc:${CC_A}/agent:a1b2c3d4`,
    );
    expect(clientPart(identityOf(request, { 'x-claude-code-agent-id': 'has space' }))).toBe(`cc:${CC_A}`);
    // The explicit header too (Claude Code passes custom headers on to its subagents).
    expect(
      identityOf(request, { [SESSION_HEADER]: 'mine', 'x-claude-code-agent-id': 'a1b2' }).sessionId,
    ).toBe('mine/agent:a1b2');
  });

  it('still refuses a malformed explicit x-selfgc-session', () => {
    const request = claudeCodeRequest({ kind: 'header', sessionId: CC_A });
    expect(() => identityOf(request, { [SESSION_HEADER]: 'has space' })).toThrow(BadInputError);
    expect(identityOf(request, { [SESSION_HEADER]: 'chosen' })).toMatchObject({
      sessionId: 'chosen',
      source: 'explicit',
    });
  });

  it('reads no session from metadata.user_id that is not Claude Code’s', () => {
    expect(claudeCodeSessionOf({ metadata: { user_id: 'customer-1234' } })).toBeUndefined();
    expect(claudeCodeSessionOf({ metadata: { user_id: '{"device_id":"d"}' } })).toBeUndefined();
    expect(claudeCodeSessionOf({ metadata: { user_id: '{not json' } })).toBeUndefined();
    expect(findClientSessionId(new Headers(), { metadata: { user_id: 'customer-1234' } })).toBeUndefined();
  });

  it('hints a worker with the first session header, before the body is parsed', () => {
    expect(
      clientSessionHint(new Headers(codexRequest({ thread: THREAD_B, session: THREAD_A }).headers)),
    ).toBe(THREAD_B);
    expect(clientSessionHint(new Headers({ authorization: 'Bearer k' }))).toBe('');
  });
});
