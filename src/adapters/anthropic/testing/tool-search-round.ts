/**
 * Claude Code's `ToolSearch` loading deferred tools, in Messages wire form: its call, then a
 * result of `tool_reference` blocks, one per tool it loads.
 */
export function toolSearchRound(id: string, names: readonly string[]): Array<Record<string, unknown>> {
  const query = `select:${names.join(',')}`;
  return [
    { role: 'assistant', content: [{ type: 'tool_use', id, name: 'ToolSearch', input: { query } }] },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: id,
          content: names.map((name) => ({ type: 'tool_reference', tool_name: name })),
        },
      ],
    },
  ];
}
