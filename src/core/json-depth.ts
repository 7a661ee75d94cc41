/**
 * A cheap scan for how deeply JSON text nests, run before `JSON.parse` on untrusted input:
 * parsing a deep document succeeds, but every recursive walk after it (zod, `JSON.stringify`,
 * the ledger's argument walk) overflows the stack, which would surface as an internal error
 * instead of a refusal.
 */

/**
 * Deepest nesting of arrays and objects accepted from untrusted JSON. Real requests nest a
 * dozen levels (body → messages → content parts → tool arguments); 256 leaves ample room while
 * every recursive walk stays far from the stack limit.
 */
export const MAX_JSON_DEPTH = 256;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Whether JSON text (or its UTF-8 bytes) nests arrays and objects deeper than `maxDepth`.
 * Brackets inside strings do not count. Malformed text is not judged here: the parser that
 * follows reports it. Every byte of a multi-byte UTF-8 character is ≥ 0x80, so scanning bytes
 * and scanning UTF-16 code units find the same structure.
 */
export function exceedsJsonDepth(json: string | Uint8Array, maxDepth: number = MAX_JSON_DEPTH): boolean {
  const text = typeof json === 'string' ? json : undefined;
  const bytes = typeof json === 'string' ? undefined : json;
  const codeAt = (index: number) => (text === undefined ? bytes![index]! : text.charCodeAt(index));
  // Strings hold most of a request's bytes: jump over them with the native search.
  const quoteFrom = (index: number) =>
    text === undefined ? bytes!.indexOf(QUOTE, index) : text.indexOf('"', index);
  const length = json.length;
  let depth = 0;
  for (let index = 0; index < length; index += 1) {
    const code = codeAt(index);
    if (code === QUOTE) {
      index = closingQuote(index, codeAt, quoteFrom);
      if (index < 0) return false;
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      depth += 1;
      if (depth > maxDepth) return true;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      depth -= 1;
    }
  }
  return false;
}

/** Index of the quote that closes the string opened at `open`, or -1 when it never closes. */
function closingQuote(
  open: number,
  codeAt: (index: number) => number,
  quoteFrom: (index: number) => number,
): number {
  let quote = quoteFrom(open + 1);
  while (quote >= 0) {
    let backslashes = 0;
    while (codeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    quote = quoteFrom(quote + 1);
  }
  return -1;
}
