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

/** Bytes `[start, end)` of a body. */
export interface ByteSpan {
  start: number;
  end: number;
}

/** A top-level field: its key, its value's bytes, and its elements' when the value is an array. */
export interface FieldLayout extends ByteSpan {
  key: string;
  elements?: ByteSpan[];
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

  /** The elements of the array that opens here, one level below the top. */
  arrayElements(): ByteSpan[] {
    const elements: ByteSpan[] = [];
    this.index += 1; // [
    this.skipWhitespace();
    if (this.bytes[this.index] === CLOSE_ARRAY) {
      this.index += 1;
      return elements;
    }
    for (;;) {
      this.skipWhitespace();
      const start = this.index;
      this.skipValue(2);
      elements.push({ start, end: this.index });
      this.skipWhitespace();
      const next = this.bytes[this.index];
      this.index += 1;
      if (next === CLOSE_ARRAY) return elements;
      if (next !== COMMA) fail();
    }
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
 * The layout of a JSON object's bytes, or undefined when they are not an object's outline, nest
 * deeper than `maxDepth`, or carry a byte-order mark (those bodies are parsed whole, which
 * reports what is wrong with them). Keys are decoded; values are not.
 */
export function layoutJsonObject(bytes: Uint8Array, maxDepth = MAX_JSON_DEPTH): FieldLayout[] | undefined {
  const scanner = new Scanner(bytes, maxDepth);
  try {
    scanner.expect(OPEN_OBJECT);
    const fields: FieldLayout[] = [];
    scanner.skipWhitespace();
    if (bytes[scanner.index] === CLOSE_OBJECT) scanner.index += 1;
    else {
      for (;;) {
        const key = scanner.key();
        scanner.expect(COLON);
        scanner.skipWhitespace();
        const start = scanner.index;
        const elements = bytes[start] === OPEN_ARRAY ? scanner.arrayElements() : undefined;
        if (elements === undefined) scanner.skipValue(1);
        fields.push({ key, start, end: scanner.index, ...(elements ? { elements } : {}) });
        scanner.skipWhitespace();
        const next = bytes[scanner.index];
        scanner.index += 1;
        if (next === CLOSE_OBJECT) break;
        if (next !== COMMA) fail();
      }
    }
    scanner.skipWhitespace();
    return scanner.index === bytes.length ? fields : undefined;
  } catch (error) {
    if (error instanceof OutlineError || error instanceof SyntaxError || error instanceof TypeError) {
      return undefined;
    }
    throw error;
  }
}
