/**
 * A request body written back as UTF-8 bytes, taking the client's own bytes for every part that
 * governance left as it came: a top-level field, or an element of a top-level array (a message,
 * an item, a tool). Unchanged parts are found by identity (the parsed value itself) or, for parts
 * a dialect wrote anew from unchanged content, by `sameJson`; only what changed is serialised.
 * The bytes parse to the same JSON as `JSON.stringify(body)` would write.
 */
import type { FieldLayout } from './json-layout.js';
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

/** Pieces of output: text to encode, or a span of the client's bytes. */
class Pieces {
  readonly parts: Array<string | Uint8Array> = [];
  private text = '';

  write(text: string): void {
    this.text += text;
  }

  copy(bytes: Uint8Array, start: number, end: number): void {
    this.flush();
    this.parts.push(bytes.subarray(start, end));
  }

  /** One buffer that owns its memory. */
  join(): Uint8Array {
    this.flush();
    const encoded = this.parts.map((part) => (typeof part === 'string' ? encoder.encode(part) : part));
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

  private flush(): void {
    if (this.text === '') return;
    this.parts.push(this.text);
    this.text = '';
  }
}

/** Whether `JSON.stringify` leaves a member with this value out. */
function isOmitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

export function renderBodyBytes(body: JsonObject, source: ParsedBody): Uint8Array {
  const fields = new Map(source.fields.map((field) => [field.key, field]));
  const pieces = new Pieces();
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
      writeArray(pieces, value, original, field, source.bytes);
    } else if (sameJson(value, original)) pieces.copy(source.bytes, field.start, field.end);
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
  bytes: Uint8Array,
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
    pieces.copy(bytes, span.start, span.end);
    next = found + 1;
  });
  pieces.write(']');
}
