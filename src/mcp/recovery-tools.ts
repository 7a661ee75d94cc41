/**
 * The two tools `selfgc mcp` serves: `expand` (the exact content of a folded, masked or pruned
 * object, paged) and `search_context` (full-text search over what left the view). Arguments are
 * validated here; what the model can fix (bad arguments, an unknown id, an offset past the end)
 * comes back as a tool error it can read (`isError`), as MCP asks of tool execution errors.
 */
import { z } from 'zod';
import { ExpandArguments, SearchContextArguments } from '../core/gc-tools/index.js';
import type { Governor } from '../core/governor/governor-types.js';

/** What the tools read: the governor's recovery path over one store. */
export type RecoverySource = Pick<Governor, 'expand' | 'searchContext'>;

/** Characters of a payload in one `expand` answer when the call does not say. */
export const DEFAULT_PAGE_CHARS = 20_000;
/** The most `max_chars` may ask for: a page must still fit a tool result. */
export const MAX_PAGE_CHARS = 200_000;

const ExpandPageArguments = ExpandArguments.extend({
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Where the page starts, in characters (default 0); a cut-off answer names the next offset.'),
  max_chars: z
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_CHARS)
    .optional()
    .describe(`Most characters to return (default ${DEFAULT_PAGE_CHARS}).`),
});

const TOOLS = {
  expand: {
    schema: ExpandPageArguments,
    description:
      'Recover the exact content of an object Self-GC folded, masked or pruned out of your context, by the id ' +
      'its placeholder names (expand("function:read_file:12"), expand("conversation:user:1@57")). Long content ' +
      `comes in pages of ${DEFAULT_PAGE_CHARS} characters; the answer says how to get the rest.`,
  },
  search_context: {
    schema: SearchContextArguments,
    description:
      'Full-text search over content Self-GC removed from your context (folded, masked or pruned objects). ' +
      'Returns matching object ids with snippets; expand(id) recovers one.',
  },
} as const;

export type RecoveryToolName = keyof typeof TOOLS;

/** One tool as `tools/list` describes it. */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** What `tools/call` answers: text content, flagged when the call failed. */
export interface McpToolResult {
  content: Array<{ type: 'text'; text: string }>;
  isError?: true;
}

export function isRecoveryToolName(name: string): name is RecoveryToolName {
  return Object.hasOwn(TOOLS, name);
}

/** The tools, for `tools/list`. */
export function recoveryTools(): McpTool[] {
  return Object.entries(TOOLS).map(([name, tool]) => {
    const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(tool.schema, { io: 'input' });
    return { name, description: tool.description, inputSchema };
  });
}

const text = (value: string): McpToolResult['content'][number] => ({ type: 'text', text: value });
const failure = (message: string): McpToolResult => ({ content: [text(message)], isError: true });

/** A page of `payload` from `offset`, never ending inside a surrogate pair. */
function pageEnd(payload: string, offset: number, maxChars: number): number {
  let end = Math.min(payload.length, offset + maxChars);
  const last = payload.charCodeAt(end - 1);
  if (end < payload.length && end - 1 > offset && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return end;
}

async function expand(
  source: RecoverySource,
  sessionId: string,
  value: z.infer<typeof ExpandPageArguments>,
): Promise<McpToolResult> {
  const payload = await source.expand(sessionId, value.id);
  if (payload === undefined) {
    return failure(
      `nothing stored for ${value.id}: it is still in your context whole, or no such object exists in this session.`,
    );
  }
  const offset = value.offset ?? 0;
  if (offset > payload.length || (offset === payload.length && offset > 0)) {
    return failure(`offset ${offset} is past the end of ${value.id} (${payload.length} characters).`);
  }
  const end = pageEnd(payload, offset, value.max_chars ?? DEFAULT_PAGE_CHARS);
  // The first item is the payload's own characters, so pages join back byte for byte.
  const content = [text(payload.slice(offset, end))];
  if (offset > 0 || end < payload.length) {
    const rest =
      end < payload.length
        ? ` The rest: expand with {"id": ${JSON.stringify(value.id)}, "offset": ${end}}.`
        : ' This is the last page.';
    content.push(text(`[characters ${offset}..${end} of ${payload.length} of ${value.id}.${rest}]`));
  }
  return { content };
}

async function searchContext(
  source: RecoverySource,
  sessionId: string,
  value: z.infer<typeof SearchContextArguments>,
): Promise<McpToolResult> {
  const hits = await source.searchContext(sessionId, value.query, value.limit ?? 5);
  const query = JSON.stringify(value.query);
  if (hits.length === 0) return { content: [text(`no removed content matches ${query}.`)] };
  const lines = hits.map((hit) => `${hit.objectId}: ${hit.snippet.replace(/\s+/g, ' ').trim()}`);
  const heading = `${hits.length} match${hits.length === 1 ? '' : 'es'} for ${query} (expand(id) recovers one):`;
  return { content: [text([heading, ...lines].join('\n'))] };
}

/** Run one tool of session `sessionId`. Never rejects: a failure is a tool error. */
export async function callRecoveryTool(
  source: RecoverySource,
  sessionId: string,
  name: RecoveryToolName,
  input: unknown,
): Promise<McpToolResult> {
  const parsed = TOOLS[name].schema.safeParse(input ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`,
    );
    return failure(`bad arguments for ${name}: ${issues.join('; ')}`);
  }
  try {
    return name === 'expand'
      ? await expand(source, sessionId, parsed.data as z.infer<typeof ExpandPageArguments>)
      : await searchContext(source, sessionId, parsed.data as z.infer<typeof SearchContextArguments>);
  } catch (error) {
    return failure(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
