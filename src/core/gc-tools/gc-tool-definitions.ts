/**
 * The agent's GC tools — `fold(id)`, `prune(id)`, `expand(id)`, `search_context(query)` — as
 * argument schemas (zod, used to validate calls) and as tool definitions in each provider's own
 * shape, all derived from the same schemas so a definition and its validation cannot drift.
 */
import { z } from 'zod';

export const FoldArguments = z.object({
  id: z
    .string()
    .min(1)
    .describe('Id of the object to fold, as listed in the context ledger (e.g. "function:bash:7").'),
  summary: z
    .string()
    .max(600)
    .optional()
    .describe('Optional: what the view should still say about it (key paths, identifiers, results).'),
  reason: z.string().max(300).optional().describe('Optional: why it is no longer needed whole.'),
});
export type FoldArguments = z.infer<typeof FoldArguments>;

export const PruneArguments = z.object({
  id: z.string().min(1).describe('Id of the object to prune, as listed in the context ledger.'),
  reason: z.string().max(300).optional().describe('Optional: why nothing depends on it any more.'),
});
export type PruneArguments = z.infer<typeof PruneArguments>;

export const ExpandArguments = z.object({
  id: z.string().min(1).describe('Id of a folded, masked or pruned object whose exact content you need.'),
});
export type ExpandArguments = z.infer<typeof ExpandArguments>;

export const SearchContextArguments = z.object({
  query: z.string().min(1).max(500).describe('Words to look for in content removed from the view.'),
  limit: z.number().int().min(1).max(20).optional().describe('Most matches to return (default 5).'),
});
export type SearchContextArguments = z.infer<typeof SearchContextArguments>;

export type GcToolName = 'fold' | 'prune' | 'expand' | 'search_context';

export const GC_TOOL_ARGUMENTS = {
  fold: FoldArguments,
  prune: PruneArguments,
  expand: ExpandArguments,
  search_context: SearchContextArguments,
} as const satisfies Record<GcToolName, z.ZodType>;

const DESCRIPTIONS: Record<GcToolName, string> = {
  fold: 'Fold an object of your context: its exact content moves out of the view and a short summary with its key anchors and a recovery pointer stays. Use it for output you may need again only in outline. Recover it with expand(id).',
  prune:
    'Prune an object: it leaves the view, with a one-line tombstone. Use it only for output nothing will need again (superseded, duplicated, a failure already fixed).',
  expand: 'Recover the exact content of a folded, masked or pruned object, by id.',
  search_context:
    'Full-text search over content removed from the view (folded, masked or pruned objects). Returns matching object ids with snippets; expand(id) recovers one.',
};

/** A JSON schema object, as the providers accept it. */
export type JsonSchema = Record<string, unknown>;

/** A tool definition in no provider's shape: name, description, JSON schema of the arguments. */
export interface GcToolSpec {
  name: GcToolName;
  description: string;
  parameters: JsonSchema;
}

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' });
  return rest;
}

/** The four tools, provider-neutral. */
export const gcToolSpecs: readonly GcToolSpec[] = (Object.keys(GC_TOOL_ARGUMENTS) as GcToolName[]).map(
  (name) => ({
    name,
    description: DESCRIPTIONS[name],
    parameters: jsonSchemaOf(GC_TOOL_ARGUMENTS[name]),
  }),
);

/** OpenAI Chat Completions `tools` entries. */
export interface OpenAIChatFunctionTool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

export function gcToolsForOpenAIChat(): OpenAIChatFunctionTool[] {
  return gcToolSpecs.map((spec) => ({ type: 'function', function: { ...spec } }));
}

/** OpenAI Responses `tools` entries (function tools are flat there). */
export interface OpenAIResponsesFunctionTool {
  type: 'function';
  name: string;
  description: string;
  parameters: JsonSchema;
  strict: false;
}

export function gcToolsForOpenAIResponses(): OpenAIResponsesFunctionTool[] {
  return gcToolSpecs.map((spec) => ({ type: 'function', ...spec, strict: false }));
}

/** Anthropic Messages `tools` entries. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
}

export function gcToolsForAnthropic(): AnthropicTool[] {
  return gcToolSpecs.map((spec) => ({
    name: spec.name,
    description: spec.description,
    input_schema: spec.parameters,
  }));
}

/** AI SDK language-model function tools (`LanguageModelV3FunctionTool`), for middleware. */
export interface AiSdkFunctionTool {
  type: 'function';
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

export function gcToolsForAiSdk(): AiSdkFunctionTool[] {
  return gcToolSpecs.map((spec) => ({
    type: 'function',
    name: spec.name,
    description: spec.description,
    inputSchema: spec.parameters,
  }));
}

export function isGcToolName(name: string): name is GcToolName {
  return Object.hasOwn(GC_TOOL_ARGUMENTS, name);
}
