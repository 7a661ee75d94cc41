/**
 * A request body written back as UTF-8 bytes, taking the client's own bytes for every part that
 * governance left as it came: a top-level field, or an element of a top-level array (a message,
 * an item, a tool). Unchanged parts are found by identity (the parsed value itself) or, for parts
 * a dialect wrote anew from unchanged content, by `sameJson`; only what changed is serialised.
 * The bytes parse to the same JSON as `JSON.stringify(body)` would write.
 */
import type { ByteSpan, FieldLayout } from './json-layout.js';
import { sameJson } from './same-json.js';
import type { JsonObject } from './wire-dialect.js';

/** A body as it was read: its bytes, their layout, and the value parsed from each field. */
export interface ParsedBody {
  bytes: Uint8Array;
  /** One entry per key. */
  fields: readonly FieldLayout[];
  /** The parsed value of each field; an array field's elements line up with `elements`. */
  values: ReadonlyMap<string, unknown>;
}

/**
 * Comparisons an array may spend finding where its changed elements stood in the client's, per
 * element: a few replacements look through the rest once; past that they are serialised.
 */
const SEARCH_BUDGET_PER_ELEMENT = 8;

const encoder = new TextEncoder();

/**
 * Pieces of output: text to encode, or spans of the client's bytes. A span that follows another
 * with, between them, the very text written since (a comma, a key) extends it, so an unchanged
 * run of members or elements is one copy, and an unchanged body is the client's bytes themselves.
 */
class Pieces {
  private readonly parts: Array<string | ByteSpan> = [];
  /** Written since the last part. */
  private text = '';
  /** The span of the client's bytes being extended. */
  private run: ByteSpan | undefined;

  constructor(private readonly source: Uint8Array) {}

  write(text: string): void {
    this.text += text;
  }

  copy(start: number, end: number): void {
    const from = this.run?.end ?? (this.parts.length === 0 ? 0 : undefined);
    if (from !== undefined && this.textIsSourceAt(from, start)) {
      this.run = { start: this.run?.start ?? 0, end };
      this.text = '';
      return;
    }
    this.close();
    this.run = { start, end };
  }

  /** The output: the client's bytes when it is all theirs, else one buffer that owns its memory. */
  join(): Uint8Array {
    const { run, source } = this;
    if (run?.start === 0 && this.parts.length === 0 && this.textIsSourceAt(run.end, source.length))
      return source;
    this.close();
    const encoded = this.parts.map((part) =>
      typeof part === 'string' ? encoder.encode(part) : source.subarray(part.start, part.end),
    );
    let length = 0;
    for (const part of encoded) length += part.byteLength;
    const out = new Uint8Array(length);
    let offset = 0;
    for (const part of encoded) {
      out.set(part, offset);
      offset += part.byteLength;
    }
    return out;
  }

  /** Whether the text written since the last part is the client's bytes `[from, to)` (ASCII only). */
  private textIsSourceAt(from: number, to: number): boolean {
    const { text, source } = this;
    if (to - from !== text.length) return false;
    for (let index = 0; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      if (code >= 0x80 || source[from + index] !== code) return false;
    }
    return true;
  }

  private close(): void {
    if (this.run !== undefined) this.parts.push(this.run);
    this.run = undefined;
    if (this.text !== '') this.parts.push(this.text);
    this.text = '';
  }
}

/** Whether `JSON.stringify` leaves a member with this value out. */
function isOmitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

export function renderBodyBytes(body: JsonObject, source: ParsedBody): Uint8Array {
  const fields = new Map(source.fields.map((field) => [field.key, field]));
  const pieces = new Pieces(source.bytes);
  pieces.write('{');
  let first = true;
  for (const [key, value] of Object.entries(body)) {
    if (isOmitted(value)) continue;
    pieces.write(`${first ? '' : ','}${JSON.stringify(key)}:`);
    first = false;
    const field = fields.get(key);
    const original = source.values.get(key);
    if (field === undefined) pieces.write(JSON.stringify(value));
    else if (
      field.elements !== undefined &&
      Array.isArray(value) &&
      Array.isArray(original) &&
      value !== original
    ) {
      writeArray(pieces, value, original, field);
    } else if (sameJson(value, original)) pieces.copy(field.start, field.end);
    else pieces.write(JSON.stringify(value));
  }
  pieces.write('}');
  return pieces.join();
}

/**
 * An array field element by element: an element that is one of the client's (or the same JSON
 * as one, found in order after the last match) is copied, anything else serialised.
 */
function writeArray(
  pieces: Pieces,
  value: readonly unknown[],
  original: readonly unknown[],
  field: FieldLayout,
): void {
  const elements = field.elements!;
  const positions = new Map<unknown, number>();
  original.forEach((element, index) => {
    if (typeof element === 'object' && element !== null) positions.set(element, index);
  });
  let next = 0;
  let budget = SEARCH_BUDGET_PER_ELEMENT * (value.length + 1);
  pieces.write('[');
  value.forEach((element, index) => {
    if (index > 0) pieces.write(',');
    let found = positions.get(element);
    for (
      let candidate = next;
      found === undefined && candidate < original.length && budget > 0;
      candidate += 1
    ) {
      budget -= 1;
      if (sameJson(element ?? null, original[candidate])) found = candidate;
    }
    if (found === undefined) {
      pieces.write(isOmitted(element) ? 'null' : JSON.stringify(element));
      return;
    }
    const span = elements[found]!;
    pieces.copy(span.start, span.end);
    next = found + 1;
  });
  pieces.write(']');
}
