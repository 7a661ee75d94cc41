/**
 * Opaque parts: the provider blocks and items an adapter keeps whole instead of reading (see
 * `OpaquePart` in `core/transcript.ts`). One mechanism for every block the core need not
 * understand, today's and tomorrow's: the wire object rides in `data`, and `text` is what the
 * model reads in it, found by field name rather than by a case per block type.
 */
import { z } from 'zod';
import type { OpaquePart } from '../core/transcript.js';
import { isRecord, type JsonRecord } from './provider-data.js';

/** A wire block or item kept whole: any object with a string `type`. */
export type OpaqueWire = { type: string } & JsonRecord;

/**
 * The schema of a block kept whole: an object whose `type` is a string the adapter does not
 * read. A malformed block of a read type is refused here, so that the read type's own schema
 * names what is wrong with it: the check aborts (a union prefers a branch that did not) and sits
 * on the object (its issue is no deeper than theirs).
 */
export function opaqueSchema(read: ReadonlySet<string>): z.ZodType<OpaqueWire> {
  return z.looseObject({ type: z.string() }).refine((block) => !read.has(block.type), {
    message: 'malformed block',
    abort: true,
  }) as z.ZodType<OpaqueWire>;
}

/**
 * Fields whose string values (or arrays of strings) a model reads as text: messages, search
 * queries and results, titles and URLs, command lines and their output, paths and diffs, names.
 */
const VISIBLE_FIELDS = new Set([
  'text',
  'content',
  'title',
  'url',
  'query',
  'queries',
  'pattern',
  'source',
  'context',
  'stdout',
  'stderr',
  'output',
  'input',
  'arguments',
  'command',
  'commands',
  'path',
  'diff',
  'lines',
  'name',
  'server_name',
  'tool_name',
  'filename',
  'error',
  'error_code',
  'summary',
]);

/**
 * Fields whose whole subtree is payload the model does not read as text, or reads only in a
 * form the proxy cannot see: base64 data, encrypted state, signatures, provider ids.
 */
const HIDDEN_FIELDS = new Set([
  'encrypted_content',
  'encrypted_index',
  'signature',
  'file_data',
  'image_url',
  'id',
  'call_id',
  'tool_use_id',
  'file_id',
  'cache_control',
]);

/**
 * Fields that hold tool definitions the model reads whole, as it reads a request's `tools`:
 * Codex's `tool_search_output` and `additional_tools`, an MCP listing, Anthropic's
 * `tool_addition`. Their JSON counts, schema and all.
 */
const TOOL_DEFINITION_FIELDS = new Set(['tools', 'definition']);

/** Below a field named by `VISIBLE_FIELDS` that holds an object (`input`, `action`), every string counts. */
const OBJECT_VALUE_FIELDS = new Set(['input', 'arguments', 'action', 'operation']);

/**
 * The text a model reads in a wire block, joined by newlines: the strings of visible fields at
 * any depth, every string value inside a tool's input or action, and tool definitions as JSON. A
 * `data` field counts only beside a `text/*` media type (an Anthropic plain-text document);
 * elsewhere it is base64.
 */
export function visibleText(block: unknown): string {
  const out: string[] = [];
  const walk = (value: unknown, field: string | undefined, everything: boolean): void => {
    if (typeof value === 'string') {
      if (everything || (field !== undefined && VISIBLE_FIELDS.has(field))) out.push(value);
      return;
    }
    if (Array.isArray(value)) {
      for (const inner of value) walk(inner, field, everything);
      return;
    }
    if (!isRecord(value)) return;
    for (const [key, inner] of Object.entries(value)) {
      if (HIDDEN_FIELDS.has(key) || key === 'type') continue;
      if (key === 'data') {
        if (typeof inner === 'string' && isTextMediaType(value.media_type)) out.push(inner);
        continue;
      }
      if (TOOL_DEFINITION_FIELDS.has(key) && (Array.isArray(inner) || isRecord(inner))) {
        out.push(JSON.stringify(inner, (field, held) => (field === 'cache_control' ? undefined : held)));
        continue;
      }
      walk(inner, key, everything || (OBJECT_VALUE_FIELDS.has(key) && isRecord(inner)));
    }
  };
  walk(block, undefined, false);
  return out.filter((piece) => piece !== '').join('\n');
}

function isTextMediaType(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith('text/');
}

/**
 * The opaque part for a wire block (or item) read by the adapter of `provider`; `text`, what the
 * model reads in it, when the adapter knows better than the field names tell (`visibleText`).
 */
export function opaquePart(provider: string, data: JsonRecord, text = visibleText(data)): OpaquePart {
  const kind = typeof data.type === 'string' ? data.type : 'item';
  return { type: 'opaque', provider, kind, text, data };
}

/** The wire block of an opaque part this adapter read itself, or undefined for anyone else's. */
export function ownOpaqueData(part: OpaquePart, provider: string): JsonRecord | undefined {
  return part.provider === provider ? part.data : undefined;
}
