/**
 * Deferred tools on a governed request. With tool search, a client lists tools with
 * `defer_loading: true` and the model reads a tool's definition only once a `tool_reference` to it
 * stands in the conversation (Claude Code loads even its own task tools this way, early in a
 * session, through its `ToolSearch` tool). When governance folds or prunes the result that held
 * the reference, the model would lose the definition of a tool it keeps calling. So a tool the
 * client's messages load and the governed messages no longer do is sent loaded: without
 * `defer_loading`, as if always in the prompt, which is what the reference gave the model.
 *
 * Nothing is mutated: a changed tool is a copy, and the list is the client's own when no tool
 * changes.
 */
import { isRecord } from '../provider-data.js';

/** The tool names `tool_reference` blocks name anywhere in `value` (results of any tool search). */
export function referencedTools(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const inner of value) referencedTools(inner, into);
  } else if (isRecord(value)) {
    if (value.type === 'tool_reference' && typeof value.tool_name === 'string') into.add(value.tool_name);
    for (const inner of Object.values(value)) if (typeof inner === 'object') referencedTools(inner, into);
  }
  return into;
}

/**
 * `tools` with the deferred tools that `clientMessages` load and `governedMessages` no longer do
 * sent loaded; `tools` itself when there are none.
 */
export function keepLoadedTools(tools: unknown, clientMessages: unknown, governedMessages: unknown): unknown {
  if (!Array.isArray(tools) || !tools.some((tool) => isRecord(tool) && tool.defer_loading === true))
    return tools;
  const loaded = referencedTools(clientMessages);
  if (loaded.size === 0) return tools;
  const kept = referencedTools(governedMessages);
  let changed = false;
  const written = tools.map((tool) => {
    if (!isRecord(tool) || tool.defer_loading !== true || typeof tool.name !== 'string') return tool;
    if (!loaded.has(tool.name) || kept.has(tool.name)) return tool;
    changed = true;
    const { defer_loading: _deferred, ...always } = tool;
    return always;
  });
  return changed ? written : tools;
}
