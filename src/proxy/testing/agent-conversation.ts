/**
 * A coding agent's conversation in each governed wire format, for tests and the load script:
 * a system prompt, one task, then `turns` rounds of `read_file` calls whose results are large
 * and distinct (so a governor under a small window must fold them).
 */

export type WireRoute = 'chat' | 'responses' | 'messages';

export const SYSTEM_PROMPT = 'You are a careful coding agent. Read files before editing them.';

/**
 * The output of the `turn`-th `read_file` call: about `lines` × 60 characters. A `marker` makes
 * the content specific to one conversation (so a test can tell whose payload it sees).
 */
export function fileContent(turn: number, lines = 48, marker?: string): string {
  const rows = [`// src/module${turn}.ts${marker === undefined ? '' : ` (${marker})`}`];
  for (let line = 1; line < lines; line += 1) {
    rows.push(`export const value${turn}_${line} = computeValue(${turn}, ${line}); // step ${line}`);
  }
  return rows.join('\n');
}

function pathOf(turn: number): string {
  return `src/module${turn}.ts`;
}

export interface ConversationOptions {
  /** Tool rounds after the task. */
  turns: number;
  /** The task text (distinct tasks give distinct derived sessions). */
  task?: string;
  /** Lines of each file read. */
  lines?: number;
  /** Written into every file read, to make the conversation's payloads its own. */
  marker?: string;
  /** Written into every call id (`call_<callIds><turn>`): a real model's ids differ from run to run. */
  callIds?: string;
}

function fileOf(turn: number, options: ConversationOptions): string {
  return fileContent(turn, options.lines, options.marker);
}

function taskOf(options: ConversationOptions): string {
  return options.task ?? 'Find why computeValue returns NaN for module 3 and fix it.';
}

export function chatConversation(options: ConversationOptions): Array<Record<string, unknown>> {
  const messages: Array<Record<string, unknown>> = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: taskOf(options) },
  ];
  for (let turn = 0; turn < options.turns; turn += 1) {
    const id = `call_${options.callIds ?? ''}${turn}`;
    const call = {
      id,
      type: 'function',
      function: { name: 'read_file', arguments: JSON.stringify({ path: pathOf(turn) }) },
    };
    messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    messages.push({ role: 'tool', tool_call_id: id, content: fileOf(turn, options) });
  }
  return messages;
}

export function responsesConversation(options: ConversationOptions): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [{ type: 'message', role: 'user', content: taskOf(options) }];
  for (let turn = 0; turn < options.turns; turn += 1) {
    const callId = `call_${options.callIds ?? ''}${turn}`;
    items.push({
      type: 'function_call',
      call_id: callId,
      name: 'read_file',
      arguments: JSON.stringify({ path: pathOf(turn) }),
    });
    items.push({ type: 'function_call_output', call_id: callId, output: fileOf(turn, options) });
  }
  return items;
}

export function anthropicConversation(options: ConversationOptions): Array<Record<string, unknown>> {
  const messages: Array<Record<string, unknown>> = [{ role: 'user', content: taskOf(options) }];
  for (let turn = 0; turn < options.turns; turn += 1) {
    const id = `toolu_${options.callIds ?? ''}${turn}`;
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id, name: 'read_file', input: { path: pathOf(turn) } }],
    });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: fileOf(turn, options) }],
    });
  }
  return messages;
}

/** The request body of one turn, in the route's own shape. */
export function conversationBody(
  route: WireRoute,
  options: ConversationOptions & { model?: string; stream?: boolean },
): Record<string, unknown> {
  const stream = options.stream === undefined ? {} : { stream: options.stream };
  switch (route) {
    case 'chat':
      return { model: options.model ?? 'gpt-4o', messages: chatConversation(options), ...stream };
    case 'responses':
      return {
        model: options.model ?? 'gpt-4o',
        instructions: SYSTEM_PROMPT,
        input: responsesConversation(options),
        ...stream,
      };
    case 'messages':
      return {
        model: options.model ?? 'claude-sonnet-4-5',
        max_tokens: 256,
        system: SYSTEM_PROMPT,
        messages: anthropicConversation(options),
        ...stream,
      };
  }
}

/**
 * A chat request body of about `megabytes` MB, its reads 150 lines each (about 9.85 KB apiece in
 * the JSON), its files marked with `marker`: the huge body of the fairness tests and benchmark.
 */
export function hugeChatBody(megabytes: number, marker: string): string {
  const turns = Math.ceil((megabytes * 1e6) / 9_850);
  return JSON.stringify(conversationBody('chat', { turns, lines: 150, marker }));
}

export const ROUTE_PATHS: Record<WireRoute, string> = {
  chat: '/v1/chat/completions',
  responses: '/v1/responses',
  messages: '/v1/messages',
};

/** Auth headers in the route's provider style. */
export function authHeaders(route: WireRoute, apiKey: string): Record<string, string> {
  return route === 'messages'
    ? { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
    : { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
}
