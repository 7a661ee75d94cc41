/**
 * Where things are in a JSON object's UTF-8 bytes, without parsing it: the byte range of each
 * top-level field's value and, for a field that holds an array, of each of its elements. With a
 * layout, a request body that repeats most of the previous one can be compared, parsed and
 * written back by parts (`transcript-cache.ts`).
 *
 * The scan checks the object's outline (keys, colons, commas, brackets) and the nesting depth; it
 * does not check what lies inside a value: whoever uses a range parses it (`JSON.parse` of a
 * valid value's bytes ends exactly where the bracket count says it does). Anything the scan
 * cannot read as an outline gives no layout, and the caller parses the body whole.
 */
import { MAX_JSON_DEPTH } from '../core/json-depth.js';
import { sharedPrefix, sharedSuffix } from './byte-compare.js';

/** Bytes `[start, end)` of a body. */
export interface ByteSpan {
  start: number;
  end: number;
}

/**
 * A top-level field: its key, its value's bytes, and its elements' when the value is an array;
 * `keyStart`, where the member begins (its key's opening quote).
 */
export interface FieldLayout extends ByteSpan {
  key: string;
  keyStart: number;
  elements?: ByteSpan[];
}

/** The whole layout of other bytes, which may begin and end as these do (a conversation's previous body). */
export interface PreviousLayout {
  bytes: Uint8Array;
  fields: readonly FieldLayout[];
}

export interface LayoutOptions {
  /** Deepest nesting accepted (default `MAX_JSON_DEPTH`). */
  maxDepth?: number;
  /**
   * Take over the previous layout where the bytes are the same: the fields and elements inside
   * the bytes both begin with at the same places, those inside the bytes both end with shifted.
   * Only what lies between is scanned.
   */
  previous?: PreviousLayout;
  /**
   * Stop once this field's first `elements` elements are found (or the field ends): the last
   * field of the result is then cut short, and nothing after it is checked.
   */
  until?: { field: string; elements: number };
}

const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COMMA = 0x2c; // ,
const COLON = 0x3a; // :

const keyDecoder = new TextDecoder('utf-8', { fatal: true });

function isWhitespace(code: number | undefined): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** A scan that stops at the first thing that is not a JSON object's outline. */
class OutlineError extends Error {}

function fail(): never {
  throw new OutlineError();
}

class Scanner {
  index = 0;
  /** The same bytes as a Buffer, whose `indexOf` searches natively (strings are most of a body). */
  private readonly search: Buffer;
  constructor(
    readonly bytes: Uint8Array,
    readonly maxDepth: number,
  ) {
    this.search = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  skipWhitespace(): void {
    while (isWhitespace(this.bytes[this.index])) this.index += 1;
  }

  expect(code: number): void {
    this.skipWhitespace();
    if (this.bytes[this.index] !== code) fail();
    this.index += 1;
  }

  /** Past the string that opens here; the index of its closing quote is returned. */
  skipString(): number {
    const { bytes, search } = this;
    let quote = search.indexOf(QUOTE, this.index + 1);
    while (quote >= 0) {
      let backslashes = 0;
      while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes += 1;
      if (backslashes % 2 === 0) {
        this.index = quote + 1;
        return quote;
      }
      quote = search.indexOf(QUOTE, quote + 1);
    }
    return fail();
  }

  /** Past the value that starts here (already past whitespace), `depth` levels deep. */
  skipValue(depth: number): void {
    const { bytes } = this;
    const code = bytes[this.index];
    if (code === QUOTE) {
      this.skipString();
      return;
    }
    if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      this.skipContainer(depth);
      return;
    }
    // A number or a literal: whoever parses the range checks it.
    const start = this.index;
    while (this.index < bytes.length) {
      const next = bytes[this.index]!;
      if (next === COMMA || next === CLOSE_OBJECT || next === CLOSE_ARRAY || isWhitespace(next)) break;
      this.index += 1;
    }
    if (this.index === start) fail();
  }

  /** Past the object or array that opens here, counting brackets outside strings. */
  skipContainer(depth: number): void {
    const { bytes } = this;
    let level = 0;
    while (this.index < bytes.length) {
      const code = bytes[this.index]!;
      if (code === QUOTE) {
        this.skipString();
        continue;
      }
      if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
        level += 1;
        if (depth + level > this.maxDepth) fail();
      } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
        level -= 1;
        if (level === 0) {
          this.index += 1;
          return;
        }
      }
      this.index += 1;
    }
    fail();
  }

  key(): string {
    this.skipWhitespace();
    if (this.bytes[this.index] !== QUOTE) fail();
    const start = this.index;
    const end = this.skipString() + 1;
    const key: unknown = JSON.parse(keyDecoder.decode(this.bytes.subarray(start, end)));
    return typeof key === 'string' ? key : fail();
  }
}

/**
 * What can be taken over from a previous layout: members and elements that lie in the bytes both
 * begin with keep their places; from a member or element boundary inside the bytes both end
 * with, the rest of the previous layout holds, shifted.
 */
class Reuse {
  private readonly prefix: number;
  private readonly tailStart: number;
  private readonly shift: number;
  private readonly members = new Map<number, number>();
  private readonly elements = new Map<number, [field: number, element: number]>();

  constructor(
    private readonly previous: PreviousLayout,
    bytes: Uint8Array,
  ) {
    this.prefix = sharedPrefix(previous.bytes, bytes);
    const room = Math.min(previous.bytes.length, bytes.length) - this.prefix;
    this.tailStart = bytes.length - sharedSuffix(previous.bytes, bytes, room);
    this.shift = bytes.length - previous.bytes.length;
    previous.fields.forEach((field, index) => {
      this.members.set(field.keyStart, index);
      field.elements?.forEach((element, position) => {
        this.elements.set(element.start, [index, position]);
      });
    });
  }

  /** The previous member that begins here and ends inside the shared beginning. */
  memberAt(keyStart: number): FieldLayout | undefined {
    const index = this.members.get(keyStart);
    const field = index === undefined ? undefined : this.previous.fields[index];
    return field !== undefined && field.end <= this.prefix ? field : undefined;
  }

  /** The previous element (of any array: the bytes before are the same) that begins here and ends inside the shared beginning. */
  elementAt(start: number): ByteSpan | undefined {
    const found = this.elements.get(start);
    if (found === undefined) return undefined;
    const element = this.previous.fields[found[0]]!.elements![found[1]]!;
    return element.end <= this.prefix ? element : undefined;
  }

  /** From a member boundary in the shared end: the rest of the previous members, shifted. */
  restFromMember(keyStart: number): FieldLayout[] | undefined {
    if (keyStart < this.tailStart) return undefined;
    const index = this.members.get(keyStart - this.shift);
    return index === undefined
      ? undefined
      : this.previous.fields.slice(index).map((field) => this.moved(field));
  }

  /**
   * From an element boundary in the shared end: the rest of the previous array's elements and
   * its end, and the members after it, shifted.
   */
  restFromElement(start: number): { elements: ByteSpan[]; end: number; fields: FieldLayout[] } | undefined {
    if (start < this.tailStart) return undefined;
    const found = this.elements.get(start - this.shift);
    if (found === undefined) return undefined;
    const field = this.previous.fields[found[0]]!;
    return {
      elements: field.elements!.slice(found[1]).map((element) => this.span(element)),
      end: field.end + this.shift,
      fields: this.previous.fields.slice(found[0] + 1).map((next) => this.moved(next)),
    };
  }

  private span(span: ByteSpan): ByteSpan {
    return { start: span.start + this.shift, end: span.end + this.shift };
  }

  private moved(field: FieldLayout): FieldLayout {
    const elements = field.elements?.map((element) => this.span(element));
    return {
      ...field,
      ...this.span(field),
      keyStart: field.keyStart + this.shift,
      ...(elements ? { elements } : {}),
    };
  }
}

/** The scan of one object, member by member, taking over what `reuse` allows. */
class ObjectScan {
  readonly fields: FieldLayout[] = [];
  /** Set when the rest of the object was taken over: nothing is left to scan. */
  done = false;

  constructor(
    private readonly scanner: Scanner,
    private readonly reuse: Reuse | undefined,
    private readonly until: LayoutOptions['until'],
  ) {}

  /** The members, up to the closing brace (or where `until` stops). */
  members(): void {
    const { scanner } = this;
    scanner.expect(OPEN_OBJECT);
    scanner.skipWhitespace();
    if (scanner.bytes[scanner.index] === CLOSE_OBJECT) {
      scanner.index += 1;
      return;
    }
    for (;;) {
      scanner.skipWhitespace();
      this.member();
      if (this.done) return;
      scanner.skipWhitespace();
      const next = scanner.bytes[scanner.index];
      scanner.index += 1;
      if (next === CLOSE_OBJECT) return;
      if (next !== COMMA) fail();
    }
  }

  private member(): void {
    const { scanner, reuse } = this;
    const keyStart = scanner.index;
    const rest = reuse?.restFromMember(keyStart);
    if (rest !== undefined) {
      this.fields.push(...rest);
      this.done = true;
      return;
    }
    const kept = reuse?.memberAt(keyStart);
    if (kept !== undefined && !this.stopsIn(kept.key)) {
      this.fields.push(kept);
      scanner.index = kept.end;
      return;
    }
    const key = scanner.key();
    scanner.expect(COLON);
    scanner.skipWhitespace();
    const start = scanner.index;
    if (scanner.bytes[start] !== OPEN_ARRAY) {
      scanner.skipValue(1);
      this.fields.push({ key, keyStart, start, end: scanner.index });
      return;
    }
    const field: FieldLayout = { key, keyStart, start, end: start, elements: [] };
    this.fields.push(field);
    this.elements(field);
  }

  private stopsIn(key: string): boolean {
    return this.until?.field === key;
  }

  /** The elements of the array that opens here, one level below the top. */
  private elements(field: FieldLayout): void {
    const { scanner, reuse } = this;
    const elements = field.elements!;
    const limit = this.stopsIn(field.key) ? this.until!.elements : Number.POSITIVE_INFINITY;
    scanner.index += 1; // [
    scanner.skipWhitespace();
    if (scanner.bytes[scanner.index] === CLOSE_ARRAY) {
      scanner.index += 1;
      field.end = scanner.index;
      return;
    }
    for (;;) {
      if (elements.length >= limit) {
        this.done = true;
        return;
      }
      scanner.skipWhitespace();
      const start = scanner.index;
      const rest = reuse?.restFromElement(start);
      if (rest !== undefined) {
        elements.push(...rest.elements);
        field.end = rest.end;
        this.fields.push(...rest.fields);
        this.done = true;
        return;
      }
      const kept = reuse?.elementAt(start);
      if (kept === undefined) scanner.skipValue(2);
      else scanner.index = kept.end;
      elements.push({ start, end: scanner.index });
      scanner.skipWhitespace();
      const next = scanner.bytes[scanner.index];
      scanner.index += 1;
      if (next === CLOSE_ARRAY) {
        field.end = scanner.index;
        return;
      }
      if (next !== COMMA) fail();
    }
  }
}

/**
 * The layout of a JSON object's bytes, or undefined when they are not an object's outline, nest
 * deeper than `maxDepth`, or carry a byte-order mark (those bodies are parsed whole, which
 * reports what is wrong with them). Keys are decoded; values are not.
 */
export function layoutJsonObject(bytes: Uint8Array, options: LayoutOptions = {}): FieldLayout[] | undefined {
  const scanner = new Scanner(bytes, options.maxDepth ?? MAX_JSON_DEPTH);
  const reuse = options.previous === undefined ? undefined : new Reuse(options.previous, bytes);
  const scan = new ObjectScan(scanner, reuse, options.until);
  try {
    scan.members();
    if (scan.done) return scan.fields;
    scanner.skipWhitespace();
    return scanner.index === bytes.length ? scan.fields : undefined;
  } catch (error) {
    if (error instanceof OutlineError || error instanceof SyntaxError || error instanceof TypeError) {
      return undefined;
    }
    throw error;
  }
}

const valueDecoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A JSON object's `usage` field alone (the last, as `JSON.parse` reads it), as `{ usage }`, without parsing the rest (an answer that
 * echoes a request's instructions and tool schemas is mostly those); undefined when the bytes
 * are not an object's outline or the field is not JSON.
 */
export function usageHolderOf(bytes: Uint8Array): { usage: unknown } | undefined {
  const field = layoutJsonObject(bytes)?.findLast((candidate) => candidate.key === 'usage');
  if (field === undefined) return undefined;
  try {
    return { usage: JSON.parse(valueDecoder.decode(bytes.subarray(field.start, field.end))) as unknown };
  } catch {
    return undefined;
  }
}
