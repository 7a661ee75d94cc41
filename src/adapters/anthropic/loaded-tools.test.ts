import { describe, expect, it } from 'vitest';
import { keepLoadedTools, referencedTools } from './loaded-tools.js';

const deferred = (name: string) => ({ name, input_schema: { type: 'object' }, defer_loading: true });

describe('keepLoadedTools', () => {
  it("finds references in a client tool's result and in the server's tool search result", () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't', content: [{ type: 'tool_reference', tool_name: 'A' }] },
        ],
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'tool_search_tool_result',
            tool_use_id: 's',
            content: {
              type: 'tool_search_tool_search_result',
              tool_references: [{ type: 'tool_reference', tool_name: 'B' }],
            },
          },
        ],
      },
    ];
    expect([...referencedTools(messages)]).toEqual(['A', 'B']);
  });

  it('loads only what the client loaded and the governed messages lost; otherwise the same list', () => {
    const tools = [deferred('A'), deferred('B'), deferred('C'), { name: 'Read', input_schema: {} }];
    const client = [
      { type: 'tool_reference', tool_name: 'A' },
      { type: 'tool_reference', tool_name: 'B' },
    ];
    const governed = [{ type: 'tool_reference', tool_name: 'B' }];
    expect(keepLoadedTools(tools, client, governed)).toEqual([
      { name: 'A', input_schema: { type: 'object' } },
      tools[1],
      tools[2],
      tools[3],
    ]);
    expect(keepLoadedTools(tools, client, client)).toBe(tools);
    expect(keepLoadedTools(tools, [], [])).toBe(tools);
    expect(keepLoadedTools(undefined, client, [])).toBeUndefined();
  });
});
