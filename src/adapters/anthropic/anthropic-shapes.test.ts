/**
 * What real agents send to the Messages API beyond text, images, client tools and thinking:
 * documents, search results, server and MCP tool blocks, container uploads, mid-conversation
 * system messages (fixture: `fixtures/server-tools-documents.json`).
 */
import { describe, expect, it } from 'vitest';
import { type Message, messageText, type OpaquePart } from '../../core/transcript.js';
import { readFixture } from '../adapter-contract.case.js';
import { toOpenAIChat } from '../openai-chat/convert-to-openai-chat.js';
import type { AnthropicMessage, AnthropicMessagesPrompt } from './anthropic-api.js';
import { fromAnthropicMessages } from './convert-from-anthropic-messages.js';
import { toAnthropicMessages } from './convert-to-anthropic-messages.js';

const fixture = (name: string) =>
  readFixture(new URL(`./fixtures/${name}`, import.meta.url)) as AnthropicMessagesPrompt;
/**
 * Server tool blocks are whole: every server or MCP tool use has its result after it in the same
 * assistant message, and every result follows its use there.
 */
function serverPairsWhole(messages: readonly AnthropicMessage[]): boolean {
  return messages.every((message) => {
    if (typeof message.content === 'string') return true;
    const uses = new Set<unknown>();
    const answered = new Set<unknown>();
    for (const block of message.content as Array<Record<string, unknown>>) {
      if (block.type === 'server_tool_use' || block.type === 'mcp_tool_use') uses.add(block.id);
      else if (
        typeof block.type === 'string' &&
        /(_tool_result)$/.test(block.type) &&
        block.type !== 'tool_result'
      ) {
        if (!uses.has(block.tool_use_id)) return false;
        answered.add(block.tool_use_id);
      }
    }
    return [...uses].every((id) => answered.has(id));
  });
}

describe('blocks the core does not read', () => {
  const prompt = () => fixture('server-tools-documents.json');
  const opaqueKinds = (message: Message | undefined) =>
    (message?.parts ?? []).map((part) => (part.type === 'opaque' ? part.kind : part.type));

  it('keeps them as opaque parts in place, with the text the model reads in them', () => {
    const { messages } = fromAnthropicMessages(prompt());
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'user',
      'system',
      'assistant',
      'user',
    ]);
    expect(opaqueKinds(messages[1])).toEqual(['document', 'text']);
    expect(opaqueKinds(messages[2])).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
      'tool-call',
    ]);
    expect(opaqueKinds(messages[4])).toEqual(['search_result']);
    expect(opaqueKinds(messages[6])).toEqual([
      'reasoning',
      'server_tool_use',
      'bash_code_execution_tool_result',
      'mcp_tool_use',
      'mcp_tool_result',
      'text',
    ]);
    expect(opaqueKinds(messages[7])).toEqual(['container_upload', 'text']);
    const document = messages[1]?.parts[0] as OpaquePart;
    expect(document).toMatchObject({ provider: 'anthropic', kind: 'document' });
    expect(document.text).toContain('v2.4.0 drops Node 18 (see src/engine.ts)');
    expect(document.text).toContain('notes.txt');
    expect(messageText(messages[2]!)).toContain('example-engine latest release');
    expect(messageText(messages[2]!)).toContain('https://github.com/example/engine/releases/tag/v2.5.0');
    expect(messageText(messages[2]!)).not.toContain('EqgfCioIARgBIiQ3');
    expect(messageText(messages[6]!)).toContain('2.5.0\n');
    expect(messageText(messages[6]!)).toContain('#812 engine.start({ strict: true }) crashes on Windows');
    expect((messages[7]!.parts[0] as OpaquePart).text).toBe('');
    const pdf = messages[3]?.parts[0];
    expect(pdf).toMatchObject({ type: 'tool-result', name: 'Read' });
    expect(pdf?.type === 'tool-result' && Array.isArray(pdf.content) && pdf.content[1]?.type).toBe('opaque');
  });

  it('reads a mid-conversation system message as a system message and writes it back in place', () => {
    const { messages } = fromAnthropicMessages(prompt());
    expect(messages[5]).toEqual({
      role: 'system',
      parts: [{ type: 'text', text: 'Auto-approve mode is now enabled for file reads.' }],
      providerData: { anthropic: { turn: 3, content: 'string' } },
    });
    const cached = fromAnthropicMessages({
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'system',
          content: [{ type: 'text', text: 'Be brief.' }],
          cache_control: { type: 'ephemeral' },
        },
      ],
    } as unknown as AnthropicMessagesPrompt);
    const back = toAnthropicMessages(cached.messages);
    expect(JSON.stringify(back.messages)).toBe(
      '[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"Be brief."}],"cache_control":{"type":"ephemeral"}}]',
    );
    expect(back.warnings).toEqual([]);
  });

  it('a system message governance left where the API takes none goes as user text, with a warning', () => {
    const wire = {
      messages: [
        { role: 'user', content: 'Fix it.' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Reading.' },
            { type: 'tool_use', id: 't1', name: 'Read', input: {} },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'file' }] },
        { role: 'system', content: 'Auto-approve is on.' },
        { role: 'assistant', content: 'Done.' },
      ],
    } as unknown as AnthropicMessagesPrompt;
    const { messages } = fromAnthropicMessages(wire);
    expect(toAnthropicMessages(messages).warnings).toEqual([]);
    // The call and its result pruned, the text of the turn kept: the system message would follow it.
    const governed = [
      messages[0]!,
      { ...messages[1]!, parts: [messages[1]!.parts[0]!] },
      messages[3]!,
      messages[4]!,
    ];
    const { messages: written, warnings } = toAnthropicMessages(governed);
    expect(written[2]).toEqual({ role: 'user', content: 'Auto-approve is on.' });
    expect(warnings).toEqual([expect.objectContaining({ code: 'system-in-conversation', messageIndex: 2 })]);
    // After server tool use (a paused turn), it stays a system message.
    const paused = fromAnthropicMessages({
      messages: [
        { role: 'user', content: 'Search.' },
        {
          role: 'assistant',
          content: [{ type: 'server_tool_use', id: 's1', name: 'web_search', input: { query: 'x' } }],
        },
        { role: 'system', content: 'Cite sources.' },
      ],
    } as unknown as AnthropicMessagesPrompt);
    const back = toAnthropicMessages(paused.messages);
    expect(back.messages[2]).toEqual({ role: 'system', content: 'Cite sources.' });
    expect(back.warnings).toEqual([]);
  });

  it("Claude Code's system message, then its effort directive, then the reply: written back as sent", () => {
    // Claude Code 2.1 writes a mid-conversation system message, a `clear_at` copy, then an
    // effort directive (no text, `output_config` beside it) before the assistant turn.
    const wire = {
      messages: [
        { role: 'user', content: 'Fix it.' },
        { role: 'system', content: 'The date is now 2026-12-07.', clear_at: 'next_user_message' },
        { role: 'system', content: [], output_config: { effort: 'high' } },
        { role: 'assistant', content: 'Fixing.' },
        { role: 'user', content: 'Thanks.' },
        { role: 'system', content: [], output_config: { effort: 'low' } },
      ],
    } as unknown as AnthropicMessagesPrompt;
    const back = toAnthropicMessages(fromAnthropicMessages(wire).messages);
    expect(back.messages).toEqual(wire.messages);
    expect(back.warnings).toEqual([]);
  });

  it("Claude Code's late MCP tools: a system message of tool additions and removals, read and written back", () => {
    const definition = {
      name: 'mcp__jira__create_issue',
      description: 'Create a Jira issue.',
      input_schema: { type: 'object', properties: { summary: { type: 'string' } } },
    };
    const tools = {
      role: 'system',
      content: [
        { type: 'tool_addition', tool: { type: 'tool_definition', definition } },
        { type: 'tool_removal', tool: { type: 'tool_reference', name: 'mcp__old__search' } },
      ],
    };
    const wire = {
      messages: [
        { role: 'user', content: 'File the bug.' },
        tools,
        { role: 'assistant', content: 'Filing it.' },
      ],
    } as unknown as AnthropicMessagesPrompt;
    const read = fromAnthropicMessages(wire);
    // The model reads the definition whole: it counts and holds anchors as the request's tools do.
    expect(messageText(read.messages[1]!)).toContain(JSON.stringify(definition));
    const back = toAnthropicMessages(read.messages);
    expect(back.messages).toEqual(wire.messages);
    expect(back.warnings).toEqual([]);
    // Left by governance where the API takes no system message, it goes as user text: a user turn
    // holds no tool addition, so the blocks are named.
    const displaced = toAnthropicMessages([
      read.messages[0]!,
      { role: 'assistant', parts: [{ type: 'text', text: 'Hm.' }] },
      read.messages[1]!,
    ]);
    expect(displaced.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: '[tool_addition omitted]' },
        { type: 'text', text: '[tool_removal omitted]' },
      ],
    });
    expect(displaced.warnings.map((warning) => warning.code)).toEqual(['system-in-conversation']);
  });

  it('a governed view (a folded result, a span replaced by a summary) stays valid: server pairs whole', () => {
    const { messages } = fromAnthropicMessages(prompt());
    const result = messages[3]!.parts[0]!;
    const folded: Message[] = [
      ...messages.slice(0, 3),
      { ...messages[3]!, parts: [{ ...result, content: '[folded function:Read:1 → ok]' } as typeof result] },
      ...messages.slice(4),
    ];
    const { system, messages: wire, warnings } = toAnthropicMessages(folded);
    expect(warnings).toEqual([]);
    expect(system).toEqual(prompt().system);
    expect(serverPairsWhole(wire)).toBe(true);
    expect(wire.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'system',
      'assistant',
      'user',
    ]);
    expect(JSON.stringify(wire[2])).toContain('"content":"[folded function:Read:1 → ok]"');
    expect(JSON.stringify(wire[2])).toContain('"type":"search_result"');
    // A span fold: the work after the first request leaves for one summary message.
    const spanFolded = [
      ...messages.slice(0, 2),
      { role: 'user' as const, parts: [{ type: 'text' as const, text: '[folded conversation:user:1@5]' }] },
      ...messages.slice(5),
    ];
    const afterSpan = toAnthropicMessages(spanFolded);
    expect(afterSpan.warnings).toEqual([]);
    expect(afterSpan.messages.map((message) => message.role)).toEqual([
      'user',
      'system',
      'assistant',
      'user',
    ]);
    expect(serverPairsWhole(afterSpan.messages)).toBe(true);
  });

  it('another adapter writes them as their text, with a warning each, never silently', () => {
    const { messages } = fromAnthropicMessages(prompt());
    const { messages: chat, warnings } = toOpenAIChat(messages);
    expect(JSON.stringify(chat)).toContain('example-engine latest release');
    expect(JSON.stringify(chat)).toContain('[container_upload omitted]');
    const opaque = messages.flatMap((message) =>
      message.parts.flatMap((part) =>
        part.type === 'opaque'
          ? [part]
          : part.type === 'tool-result' && Array.isArray(part.content)
            ? part.content.filter((inner) => inner.type === 'opaque')
            : [],
      ),
    );
    const unsupported = warnings.filter((warning) => warning.code === 'unsupported-part');
    expect(unsupported).toHaveLength(opaque.length);
  });
});
