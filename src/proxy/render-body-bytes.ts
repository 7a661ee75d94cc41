/**
 * A request body written back as UTF-8 bytes, taking the client's own bytes for every part that
 * governance left as it came: a top-level field, or an element of a top-level array (a message,
 * an item, a tool). Unchanged parts are found by identity (the parsed value itself) or, for parts
 * a dialect wrote anew from unchanged content, by `sameJsonValue` (members in the client's order
 * or the dialect's); only what changed is serialised. The bytes parse to the same JSON value as
 * `JSON.stringify(body)` would write, with the client's member order where its bytes are kept.
 */
import type { ByteSpan, FieldLayout } from './json-layout.js';
import { sameJsonValue } from './same-json.js';
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
 * element: elements of one outline (`outlineOf`) are few, so this is only a bound on the worst.
 */
const SEARCH_BUDGET_PER_ELEMENT = 8;

/** Characters of a string an outline keeps. */
const OUTLINE_TEXT = 16;

/** A member or element value reduced to what is cheap to read: the same for the same JSON. */
function shapeOf(value: unknown): string {
  if (typeof value === 'string') return `s${value.length}`;
  if (typeof value !== 'object' || value === null) return String(value);
  if (Array.isArray(value)) return `a${value.length}`;
  return `o${Object.values(value).filter((member) => member !== undefined).length}`;
}

/** Outlines of the client's elements, kept with them: they are the same objects request after request. */
const outlines = new WeakMap<object, string>();

/**
 * An element's outline: its members (or length) and their shapes, with the start of its
 * strings. Two elements that are the same JSON value have the same outline, so an element is
 * compared only with the client's of its outline: a fold's summary, with none.
 */
function outlineOf(element: unknown): string {
  if (typeof element !== 'object' || element === null) {
    return typeof element === 'string'
      ? `s${element.length}:${element.slice(0, OUTLINE_TEXT)}`
      : String(element);
  }
  const known = outlines.get(element);
  if (known !== undefined) return known;
  let outline: string;
  if (Array.isArray(element)) outline = `a${element.length}`;
  else {
    // Members in any order, as `sameJsonValue` compares them.
    outline = Object.entries(element)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => {
        const start = typeof value === 'string' ? value.slice(0, OUTLINE_TEXT) : '';
        return `${JSON.stringify(key)}${shapeOf(value)}${start}`;
      })
      .sort()
      .join('\0');
  }
  outlines.set(element, outline);
  return outline;
}

const encoder = new TextEncoder();

/** An element serialised this short is written again rather than kept for the next render. */
const KEPT_ELEMENT_CHARS = 1_024;

/**
 * Elements a render serialised, as UTF-8, by outline: kept for the conversation's next render,
 * which writes the same ones again (a fold's summary stands in the view request after request)
 * and takes their bytes from here instead of serialising them once more.
 */
export type SerialisedElements = Map<string, Array<{ element: unknown; bytes: Uint8Array }>>;

/** The last render's serialised elements, and where this render's go. */
export interface RenderMemo {
  previous?: SerialisedElements | undefined;
  next: SerialisedElements;
}

/**
 * Pieces of output: text to encode, bytes already encoded, or spans of the client's bytes. A
 * span that follows another with, between them, the very text written since (a comma, a key)
 * extends it, so an unchanged run of members or elements is one copy, and an unchanged body is
 * the client's bytes themselves.
 */
class Pieces {
  private readonly parts: Array<string | Uint8Array | ByteSpan> = [];
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

  /** Bytes already encoded. */
  insert(bytes: Uint8Array): void {
    this.close();
    this.parts.push(bytes);
  }

  /** The output: the client's bytes when it is all theirs, else one buffer that owns its memory. */
  join(): Uint8Array {
    const { run, source } = this;
    if (run?.start === 0 && this.parts.length === 0 && this.textIsSourceAt(run.end, source.length))
      return source;
    this.close();
    const encoded = this.parts.map((part) => {
      if (typeof part === 'string') return encoder.encode(part);
      return part instanceof Uint8Array ? part : source.subarray(part.start, part.end);
    });
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

/** `memo`: the serialised elements of the conversation's last render, and a place for this one's. */
export function renderBodyBytes(body: JsonObject, source: ParsedBody, memo?: RenderMemo): Uint8Array {
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
      writeArray(pieces, value, original, field, memo);
    } else if (sameJsonValue(value, original)) pieces.copy(field.start, field.end);
    else pieces.write(JSON.stringify(value));
  }
  pieces.write('}');
  return pieces.join();
}

/** An element none of the client's is: its bytes from the last render, or serialised. */
function writeElement(pieces: Pieces, element: unknown, memo: RenderMemo | undefined): void {
  const serialise = () => (isOmitted(element) ? 'null' : JSON.stringify(element));
  if (memo === undefined) {
    pieces.write(serialise());
    return;
  }
  const written = element ?? null;
  const outline = outlineOf(written);
  let bytes = memo.previous?.get(outline)?.find((entry) => sameJsonValue(written, entry.element))?.bytes;
  if (bytes === undefined) {
    const text = serialise();
    if (text.length < KEPT_ELEMENT_CHARS) {
      pieces.write(text);
      return;
    }
    bytes = encoder.encode(text);
  }
  const list = memo.next.get(outline);
  if (list === undefined) memo.next.set(outline, [{ element: written, bytes }]);
  else list.push({ element: written, bytes });
  pieces.insert(bytes);
}

/** The index of the first of ascending `values` above `floor`. */
function firstAfter(values: readonly number[], floor: number): number {
  let [low, high] = [0, values.length];
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (values[middle]! <= floor) low = middle + 1;
    else high = middle;
  }
  return low;
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
  memo: RenderMemo | undefined,
): void {
  const elements = field.elements!;
  const positions = new Map<unknown, number>();
  original.forEach((element, index) => {
    if (typeof element === 'object' && element !== null) positions.set(element, index);
  });
  // The client's elements by outline, in order; made when an element is not one of theirs.
  let byOutline: Map<string, number[]> | undefined;
  const candidatesOf = (element: unknown): readonly number[] => {
    if (byOutline === undefined) {
      byOutline = new Map();
      original.forEach((candidate, index) => {
        const outline = outlineOf(candidate);
        const list = byOutline!.get(outline);
        if (list === undefined) byOutline!.set(outline, [index]);
        else list.push(index);
      });
    }
    return byOutline.get(outlineOf(element)) ?? [];
  };
  let next = 0;
  let budget = SEARCH_BUDGET_PER_ELEMENT * (value.length + 1);
  pieces.write('[');
  value.forEach((element, index) => {
    if (index > 0) pieces.write(',');
    let found = positions.get(element);
    if (found === undefined && next < original.length && sameJsonValue(element ?? null, original[next]))
      found = next;
    if (found === undefined) {
      // The first of its outline after the last match, as `JSON.stringify` writes it.
      const written = element ?? null;
      const candidates = candidatesOf(written);
      for (let at = firstAfter(candidates, next); at < candidates.length && budget > 0; at += 1) {
        budget -= 1;
        if (sameJsonValue(written, original[candidates[at]!])) {
          found = candidates[at]!;
          break;
        }
      }
    }
    if (found === undefined) {
      writeElement(pieces, element, memo);
      return;
    }
    const span = elements[found]!;
    pieces.copy(span.start, span.end);
    next = found + 1;
  });
  pieces.write(']');
}
