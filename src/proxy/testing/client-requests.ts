/**
 * Requests shaped as real agents send them (headers and body, trimmed to what session identity
 * and the window read), for tests. Shapes from: Claude Code's gateway protocol docs and request
 * captures quoted in coder/aibridge#241 (`metadata.user_id`, `x-claude-code-session-id`); codex-rs
 * `build_session_headers` and `ResponsesApiRequest` (`session-id`/`thread-id` since 0.131,
 * `session_id` before, `conversation_id` + `session_id` earlier still; `prompt_cache_key` = the
 * conversation id); opencode `session/llm/request.ts` (`x-session-affinity`, `X-Session-Id`,
 * `x-opencode-session`) and `provider/transform.ts` (`promptCacheKey` = session id).
 */
import type { JsonObject } from '../wire-dialect.js';
import type { WireRoute } from './agent-conversation.js';

export interface ClientRequest {
  route: WireRoute;
  headers: Record<string, string>;
  body: JsonObject;
}

/** Claude Code's tool definitions are large (about 22k tokens); a few of the same shape stand in. */
export function claudeCodeTools(count = 4, descriptionChars = 2_000): JsonObject[] {
  return Array.from({ length: count }, (_, index) => ({
    name: `Tool${index}`,
    description: `Tool ${index}. ${'Use this tool with care and read its output. '.repeat(descriptionChars / 45)}`,
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string', description: 'Absolute path' } },
      required: ['path'],
      additionalProperties: false,
      $schema: 'http://json-schema.org/draft-07/schema#',
    },
  }));
}

const CLAUDE_SYSTEM = [
  { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
  { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.' },
];

/** The first user turn Claude Code sends: a system reminder (CLAUDE.md), then the prompt. */
function claudeUserTurn(prompt: string): JsonObject {
  return {
    role: 'user',
    content: [
      { type: 'text', text: '<system-reminder>\nContents of /repo/CLAUDE.md: use pnpm.\n</system-reminder>' },
      { type: 'text', text: prompt },
    ],
  };
}

export type ClaudeCodeIdentity =
  | { kind: 'header'; sessionId: string }
  | { kind: 'legacy-metadata'; sessionId: string }
  | { kind: 'json-metadata'; sessionId: string };

export function claudeCodeRequest(
  identity: ClaudeCodeIdentity,
  prompt = 'Fix the failing test',
): ClientRequest {
  const userHash = 'a3f1'.repeat(16);
  const accountUuid = '5b0c6f7e-3a1d-4e2b-9c8d-7f6e5d4c3b2a';
  // With the header, metadata carries the same id (legacy shape); before it, metadata alone did.
  const userId =
    identity.kind === 'json-metadata'
      ? JSON.stringify({ device_id: userHash, account_uuid: accountUuid, session_id: identity.sessionId })
      : `user_${userHash}_account_${accountUuid}_session_${identity.sessionId}`;
  return {
    route: 'messages',
    headers: {
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
      'x-app': 'cli',
      'user-agent': 'claude-cli/2.1.90 (external, cli)',
      'content-type': 'application/json',
      ...(identity.kind === 'header' ? { 'x-claude-code-session-id': identity.sessionId } : {}),
    },
    body: {
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 32_000,
      system: CLAUDE_SYSTEM,
      messages: [claudeUserTurn(prompt)],
      tools: claudeCodeTools(),
      metadata: { user_id: userId },
      stream: true,
    },
  };
}

export type CodexHeaders = 'hyphenated' | 'underscored' | 'conversation';

/** Codex's first input item is its environment context, the same for every prompt in a directory. */
const CODEX_ENVIRONMENT =
  '<environment_context>\n  <cwd>/repo</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash</shell>\n</environment_context>';

export function codexRequest(
  ids: { thread: string; session?: string },
  prompt = 'Fix the failing test',
  headers: CodexHeaders = 'hyphenated',
): ClientRequest {
  const session = ids.session ?? ids.thread;
  const idHeaders: Record<string, string> =
    headers === 'hyphenated'
      ? { 'session-id': session, 'thread-id': ids.thread }
      : headers === 'underscored'
        ? { session_id: ids.thread }
        : { conversation_id: ids.thread, session_id: ids.thread };
  return {
    route: 'responses',
    headers: {
      authorization: 'Bearer sk-codex-test',
      originator: 'codex_cli_rs',
      version: '0.131.0',
      'content-type': 'application/json',
      ...idHeaders,
    },
    body: {
      model: 'gpt-5-codex',
      instructions: 'You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI.',
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: CODEX_ENVIRONMENT }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: prompt }] },
      ],
      tools: [
        {
          type: 'function',
          name: 'shell',
          description: 'Runs a shell command and returns its output.',
          strict: false,
          parameters: {
            type: 'object',
            properties: { command: { type: 'array', items: { type: 'string' } } },
            required: ['command'],
          },
        },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: ids.thread,
    },
  };
}

/** opencode with an OpenAI-compatible provider (Chat Completions through the AI SDK). */
export function opencodeRequest(
  sessionId: string,
  provider: 'openai' | 'opencode' = 'openai',
): ClientRequest {
  return {
    route: 'chat',
    headers: {
      authorization: 'Bearer sk-opencode-test',
      'user-agent': 'opencode/1.0.0',
      'content-type': 'application/json',
      ...(provider === 'opencode'
        ? { 'x-opencode-session': sessionId, 'x-opencode-request': 'msg_01', 'x-opencode-client': 'cli' }
        : { 'x-session-affinity': sessionId, 'x-session-id': sessionId }),
    },
    body: {
      model: 'gpt-4.1',
      messages: [
        { role: 'system', content: 'You are opencode, an interactive CLI agent.' },
        { role: 'user', content: 'Fix the failing test' },
      ],
      max_tokens: 32_000,
      ...(provider === 'openai' ? { prompt_cache_key: sessionId } : {}),
      stream: true,
    },
  };
}

/** An application on the OpenAI SDK that sets `prompt_cache_key` itself. */
export function sdkRequest(route: 'chat' | 'responses', promptCacheKey: string): ClientRequest {
  const conversation =
    route === 'chat'
      ? { messages: [{ role: 'user', content: 'Summarise the report' }] }
      : { input: [{ role: 'user', content: 'Summarise the report' }] };
  return {
    route,
    headers: { authorization: 'Bearer sk-sdk-test', 'content-type': 'application/json' },
    body: { model: 'gpt-4o', ...conversation, prompt_cache_key: promptCacheKey },
  };
}
