import { describe, expect, it } from 'vitest';
import { visibleText } from './opaque-part.js';

const definition = {
  type: 'function',
  name: 'create_issue',
  description: 'Open an issue in the tracker with a title and a body.',
  parameters: { type: 'object', properties: { title: { type: 'string' }, body: { type: 'string' } } },
};

describe('visibleText', () => {
  it('reads tool definitions whole, as the model reads a request of tools', () => {
    // Codex's tool search answer and the tools it adds; Anthropic's tool addition.
    const searched = { type: 'tool_search_output', call_id: 'c1', status: 'completed', tools: [definition] };
    const added = {
      type: 'tool_addition',
      tool: {
        type: 'tool_definition',
        definition: { name: 'create_issue', input_schema: definition.parameters },
      },
    };
    expect(visibleText(searched)).toBe(JSON.stringify([definition]));
    // A breakpoint on a definition is not read.
    const marked = { ...searched, tools: [{ ...definition, cache_control: { type: 'ephemeral' } }] };
    expect(visibleText(marked)).toBe(JSON.stringify([definition]));
    expect(visibleText(added)).toBe(
      JSON.stringify({ name: 'create_issue', input_schema: definition.parameters }),
    );
  });

  it('still reads only what a model reads elsewhere: no ids, no encrypted state', () => {
    expect(visibleText({ type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA' })).toBe('');
    expect(
      visibleText({ type: 'web_search_call', id: 'ws_1', action: { type: 'search', query: 'zod unions' } }),
    ).toBe('zod unions');
  });
});
