/**
 * Content binding: a digest of each canonical message and a hash chain over the transcript, so
 * that stored state can be checked against what a client sends now. Two transcripts agree on
 * message `i` exactly when their chains agree at `i`: same content in the same order from the
 * start.
 *
 * Prompt-cache breakpoints (Anthropic `cache_control`) are left out of a message's digest:
 * clients move them from turn to turn without changing what the model reads. So is the wire form
 * of a message's content (`"text"` or `[{"type": "text", …}]`): Claude Code sends a plain-text
 * message as a block while the breakpoint sits on it, and as a string once the breakpoint moved on.
 */
import { createHash } from 'node:crypto';
import type { Message } from './transcript.js';

/** Hex digits of a chain link kept: 128 bits, far from any collision a session could meet. */
const LINK_HEX = 32;

const IGNORED_KEYS = new Set(['cache_control']);
const IGNORED_MARK = /"cache_control"/;

/** The adapters' hint for how a message's content was sent (`providerData[namespace].content`). */
const CONTENT_FORMS = new Set(['string', 'array', 'null', 'absent']);

type Extras = Record<string, unknown>;

function isExtras(value: unknown): value is Extras {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Extras without the keys that do not change content: at the top, and where adapters keep the
 * wire fields they do not map (`providerData[namespace].extra`). What is left empty goes too, so
 * a block that carried only a breakpoint digests as one that never had it.
 */
function withoutIgnored(extras: Extras): Extras | undefined {
  const kept: Extras = {};
  for (const [key, value] of Object.entries(extras)) {
    if (IGNORED_KEYS.has(key)) continue;
    if (!isExtras(value) || !isExtras(value.extra)) {
      kept[key] = value;
      continue;
    }
    const { extra, ...slice } = value;
    const keptExtra = withoutIgnored(extra);
    const keptSlice = keptExtra === undefined ? slice : { ...value, extra: keptExtra };
    if (Object.keys(keptSlice).length > 0) kept[key] = keptSlice;
  }
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/**
 * Whether a message carries wire fields of its own beside its content, breakpoints aside: an
 * effort directive's `output_config`, a `clear_at` (the adapters keep the fields they do not map
 * under `providerData[namespace].extra`).
 */
export function carriesWireFields(message: Message): boolean {
  return Object.values(message.providerData ?? {}).some(
    (slice) => isExtras(slice) && isExtras(slice.extra) && withoutIgnored(slice.extra) !== undefined,
  );
}

/** Provider extras without the keys that do not change content. */
function contentExtras(extras: Extras | undefined): string {
  if (extras === undefined) return '';
  const text = JSON.stringify(extras);
  if (!IGNORED_MARK.test(text)) return text;
  const kept = withoutIgnored(extras);
  return kept === undefined ? '' : JSON.stringify(kept);
}

/** A message's extras without the wire form of its content: the parts say what it holds. */
function withoutContentForm(extras: Extras | undefined): Extras | undefined {
  if (extras === undefined) return undefined;
  let kept: Extras | undefined;
  for (const [key, slice] of Object.entries(extras)) {
    if (!isExtras(slice) || typeof slice.content !== 'string' || !CONTENT_FORMS.has(slice.content)) continue;
    const { content: _form, ...rest } = slice;
    kept ??= { ...extras };
    if (Object.keys(rest).length > 0) kept[key] = rest;
    else delete kept[key];
  }
  if (kept === undefined) return extras;
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/**
 * A part without its breakpoints: in its extras, and in the wire block an opaque part keeps whole
 * (a document, a search result), where the adapter left the client's mark.
 */
function unmarked(part: Extras): Extras {
  let kept = part;
  if (isExtras(part.providerData)) {
    const { providerData, ...fields } = part;
    const extras = withoutIgnored(providerData);
    kept = extras === undefined ? fields : { ...fields, providerData: extras };
  }
  if (kept.type === 'opaque' && isExtras(kept.data) && 'cache_control' in kept.data) {
    const { cache_control: _mark, ...data } = kept.data;
    kept = { ...kept, data };
  }
  return kept;
}

/** A part as digested: its fields (inner parts of a tool result without breakpoints) apart from its own extras. */
function partContent(rest: Extras): string {
  const text = JSON.stringify(rest);
  if (!IGNORED_MARK.test(text)) return text;
  const content = Array.isArray(rest.content)
    ? rest.content.map((inner: unknown) => (isExtras(inner) ? unmarked(inner) : inner))
    : rest.content;
  return JSON.stringify(unmarked({ ...rest, ...(content === undefined ? {} : { content }) }));
}

/**
 * The digest of one message's content: role, every part (any part type, whole), and provider
 * extras, without cache breakpoints or the content's wire form.
 */
export function messageDigest(message: Message): string {
  const hash = createHash('sha256');
  hash.update(message.role);
  hash.update('\u0000');
  for (const part of message.parts) {
    const { providerData, ...rest } = part as { providerData?: Extras };
    hash.update(partContent(rest));
    hash.update('\u0001');
    hash.update(contentExtras(providerData));
    hash.update('\u0002');
  }
  hash.update(contentExtras(withoutContentForm(message.providerData)));
  return hash.digest('hex').slice(0, LINK_HEX);
}

/** The chain link after `previous` (the empty string before the first message). */
export function chainLink(previous: string, digest: string): string {
  return createHash('sha256')
    .update(previous)
    .update('\u0000')
    .update(digest)
    .digest('hex')
    .slice(0, LINK_HEX);
}

/** The chain over `messages`: entry `i` binds messages `0..i`. */
export function transcriptChain(messages: readonly Message[], previous = ''): string[] {
  const chain: string[] = [];
  let link = previous;
  for (const message of messages) {
    link = chainLink(link, messageDigest(message));
    chain.push(link);
  }
  return chain;
}

/** How many leading entries two chains share: the index of the first message that differs. */
export function commonPrefixLength(left: readonly string[], right: readonly string[]): number {
  const length = Math.min(left.length, right.length);
  // Links bind the whole prefix, so the shared part is found by bisection.
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (left[middle] === right[middle]) low = middle + 1;
    else high = middle;
  }
  return low;
}
