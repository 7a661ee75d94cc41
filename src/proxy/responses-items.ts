/** OpenAI Responses output items, as the proxy's recovery reads them. */
import type { JsonObject } from './wire-dialect.js';

/**
 * The name an output item is a client's call by, which `keepToolCalls` and the stream merger ask
 * about; undefined for an item no client answers (reasoning, text, a search the server ran, a
 * call whose output the answer holds: a hosted shell's). Codex's `apply_patch`
 * (`custom_tool_call`), its shell and a tool search it runs itself are calls like a function's:
 * left in a turn recovery continues, each would go upstream unanswered, and streamed to the client
 * it would be run there while the model, given the recovered content, may ask for it again.
 */
export function clientCallName(item: JsonObject, answered: ReadonlySet<unknown>): string | undefined {
  if (answered.has(item.call_id)) return undefined;
  switch (item.type) {
    case 'function_call':
    case 'custom_tool_call':
      return typeof item.name === 'string' ? item.name : item.type;
    case 'tool_search_call':
      return item.execution === 'server' ? undefined : item.type;
    case 'local_shell_call':
    case 'shell_call':
    case 'apply_patch_call':
    case 'computer_call':
      return item.type;
    default:
      return undefined;
  }
}

/** The call id an output item answers (`function_call_output`, a hosted call's output), if any. */
export function answeredCallId(item: JsonObject): string | undefined {
  return typeof item.type === 'string' && item.type.endsWith('_output') && typeof item.call_id === 'string'
    ? item.call_id
    : undefined;
}

/**
 * What a client may have of a round's items (in order) when the provider keeps them and the
 * client passes them back by id: the API refuses a reasoning item without the item that followed
 * it, and an item without the reasoning it came from. So: the items before the first one `drops`
 * takes, less the reasoning that led to it; all of them when it takes none.
 */
export function pairedItems<T>(
  items: readonly T[],
  drops: (item: T) => boolean,
  isReasoning: (item: T) => boolean,
): T[] {
  const end = items.findIndex(drops);
  if (end === -1) return [...items];
  let kept = items.slice(0, end);
  while (kept.length > 0 && isReasoning(kept.at(-1)!)) kept = kept.slice(0, -1);
  return kept;
}
