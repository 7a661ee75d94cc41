/**
 * Anthropic prompt-cache breakpoints on a governed request. The API takes at most four
 * `cache_control` breakpoints in a request, counted over `tools`, `system` and `messages` (a
 * top-level `cache_control`, automatic caching, takes one more); a fifth is a 400. A governed
 * view is written from canonical messages whose providerData may carry the breakpoints an
 * earlier request placed on them (and lack the ones the client placed since), and a fold can
 * swallow the block the client marked. So, once the view is written, its messages carry the
 * client's breakpoints and no others:
 *
 * 1. Each breakpoint of the client's messages sits on its own block, found in the governed
 *    messages by what it holds (text, ids; a block that repeats, such as an environment block
 *    every turn ends with, only between the blocks that do not), or, when governance replaced
 *    that block, on the block that took its place: the last one written where the replaced ones
 *    stood (a fold's summary, a folded result). When nothing took their place (a prune without
 *    tombstone), it goes with them. Any other breakpoint in the governed messages (one an
 *    earlier request placed) is taken off.
 * 2. At most the client's own count stays, capped at four, less the breakpoints outside
 *    `messages` (tools, system, top level), which governance never changes and which stay as
 *    they are. Past that, the earliest go and the latest stay: a breakpoint marks the end of a
 *    cached prefix, and the latest one covers the longest prefix and is where the client's next
 *    request reads the cache, while a read of a long prefix also finds the shorter entries
 *    behind it (within the API's look-back of about twenty blocks).
 *
 * Nothing is mutated: changed messages and blocks are copies.
 */
import { isRecord, type JsonRecord } from '../provider-data.js';

/** The most `cache_control` breakpoints the API takes in one request. */
export const MAX_CACHE_BREAKPOINTS = 4;

/** The parts of a Messages request body the rule reads. */
export interface CacheBreakpointBody {
  tools?: unknown;
  system?: unknown;
  messages?: unknown;
  cache_control?: unknown;
}

export interface LimitedBreakpoints {
  system: unknown;
  messages: unknown[];
  /** Client breakpoints put on the block that replaced theirs. */
  moved: number;
  /** Breakpoints taken off the governed messages: placed by earlier requests, or past the limit. */
  removed: number;
}

type Path = ReadonlyArray<string | number>;

/** The governed `system` and `messages` with the client's breakpoints, as the module says. */
export function limitCacheBreakpoints(
  client: CacheBreakpointBody,
  governed: { system?: unknown; messages: unknown[] },
): LimitedBreakpoints {
  const clientMessages = Array.isArray(client.messages) ? client.messages : [];
  const topLevel = isBreakpoint(client.cache_control) ? 1 : 0;
  // Tool definitions are most of a body's objects: walked once.
  const tools = countBreakpoints(client.tools);
  const outside = tools + countBreakpoints(governed.system) + topLevel;
  const clientTotal = requestBreakpoints(client);
  const allowed = Math.max(0, Math.min(clientTotal, MAX_CACHE_BREAKPOINTS) - outside);
  if (countBreakpoints(clientMessages) === 0 && countBreakpoints(governed.messages) === 0)
    return { system: governed.system, messages: governed.messages, moved: 0, removed: 0 };

  const units = unitsOf(governed.messages);
  const { targets, moved } = placeClientBreakpoints(clientMessages, unitsOf(clientMessages), units);
  let messages = governed.messages;
  let removed = 0;
  // Take off what the client did not place, then give each target the client's breakpoint.
  const holders: Path[] = [];
  collectHolders(messages, [], holders);
  for (const path of holders) {
    if ([...targets.keys()].some((index) => startsWith(path, units[index]!.path))) continue;
    messages = updateAt(messages, path, withoutBreakpoint) as unknown[];
    removed += 1;
  }
  for (const [index, breakpoint] of targets) {
    const { path } = units[index]!;
    const holder = ownHolder(path, valueAt(messages, path));
    if (holder === undefined)
      messages = updateAt(messages, path, (value) => withBreakpoint(value, breakpoint)) as unknown[];
    // The client's own mark, not one an earlier request left there: its TTL may have changed
    // since, and the API refuses a one-hour mark after a five-minute one.
    else if (
      JSON.stringify((valueAt(messages, holder) as JsonRecord).cache_control) !== JSON.stringify(breakpoint)
    )
      messages = updateAt(messages, holder, (value) => ({
        ...(value as JsonRecord),
        cache_control: breakpoint,
      })) as unknown[];
  }
  const placed: Path[] = [];
  collectHolders(messages, [], placed);
  for (const path of placed.slice(0, Math.max(0, placed.length - allowed))) {
    messages = updateAt(messages, path, withoutBreakpoint) as unknown[];
    removed += 1;
  }
  return { system: governed.system, messages, moved, removed };
}

/** The breakpoints a request body carries in all: in `tools`, `system` and `messages`, and at the top level. */
export function requestBreakpoints(body: CacheBreakpointBody): number {
  const topLevel = isBreakpoint(body.cache_control) ? 1 : 0;
  return (
    countBreakpoints(body.tools) + countBreakpoints(body.system) + countBreakpoints(body.messages) + topLevel
  );
}

/**
 * Breakpoints inside each object counted so far. A proxy reads a conversation's tool definitions
 * and messages as the same objects request after request (they are never changed), so each is
 * walked once.
 */
const counted = new WeakMap<object, number>();

/** Breakpoints anywhere inside a value: objects with a non-null `cache_control` object. */
export function countBreakpoints(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  // An array's elements are counted one by one: the list is new each request, most of them are not.
  if (Array.isArray(value)) return value.reduce((sum: number, element) => sum + countBreakpoints(element), 0);
  let count = counted.get(value);
  if (count === undefined) {
    const holders: Path[] = [];
    collectHolders(value, [], holders);
    count = holders.length;
    counted.set(value, count);
  }
  return count;
}

function isBreakpoint(value: unknown): boolean {
  return isRecord(value);
}

function collectHolders(value: unknown, path: Path, out: Path[]): void {
  walkHolders(value, [...path], out);
}

/**
 * Depth first over objects and arrays (strings are not entered); `path` is a stack, copied per
 * holder. An object already counted without breakpoints is not entered.
 */
function walkHolders(value: unknown, path: Array<string | number>, out: Path[]): void {
  if (typeof value !== 'object' || value === null || counted.get(value) === 0) return;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const inner: unknown = value[index];
      if (typeof inner !== 'object' || inner === null) continue;
      path.push(index);
      walkHolders(inner, path, out);
      path.pop();
    }
    return;
  }
  const record = value as JsonRecord;
  if (isBreakpoint(record.cache_control)) out.push([...path]);
  for (const key in record) {
    const inner = record[key];
    if (key === 'cache_control' || typeof inner !== 'object' || inner === null) continue;
    path.push(key);
    walkHolders(inner, path, out);
    path.pop();
  }
}

/**
 * One place a breakpoint can sit: a message (a system message's own `cache_control`; a string
 * content) or a content block, with what identifies it: its kind, and its text or id.
 */
interface Unit {
  path: Path;
  value: unknown;
  kind: string;
  key: string;
}

/** Every message-level and block unit of a message list, in order. */
function unitsOf(messages: readonly unknown[]): Unit[] {
  const units: Unit[] = [];
  messages.forEach((message, index) => {
    if (!isRecord(message)) return;
    const kind = `message:${String(message.role)}`;
    if (typeof message.content === 'string') {
      units.push({ path: [index], value: message, kind, key: message.content });
      return;
    }
    if (message.role === 'system' || !Array.isArray(message.content) || message.content.length === 0)
      units.push({
        path: [index],
        value: message,
        kind,
        key: JSON.stringify(message.content ?? null, dropBreakpoints),
      });
    if (!Array.isArray(message.content)) return;
    message.content.forEach((block, blockIndex) => {
      const [blockKind, key] = identify(block);
      units.push({ path: [index, 'content', blockIndex], value: block, kind: blockKind, key });
    });
  });
  return units;
}

/**
 * What identifies a block in both bodies: its text, its id (a tool result by the call it
 * answers, whatever a fold made of its content), its signature or data; else its JSON.
 */
function identify(block: unknown): [kind: string, key: string] {
  if (!isRecord(block)) return ['?', JSON.stringify(block)];
  const kind = String(block.type);
  const field =
    kind === 'text'
      ? block.text
      : kind === 'thinking'
        ? block.signature
        : kind === 'redacted_thinking'
          ? block.data
          : (block.tool_use_id ?? block.id);
  return [kind, typeof field === 'string' ? field : JSON.stringify(block, dropBreakpoints)];
}

function dropBreakpoints(key: string, value: unknown): unknown {
  return key === 'cache_control' ? undefined : value;
}

/**
 * Where each client breakpoint goes among the governed units (by index): its own block, matched
 * in order by kind and key, or the last unit that can hold one between the matches before and
 * after it (the block that took its place); none when nothing took it.
 */
function placeClientBreakpoints(
  clientMessages: readonly unknown[],
  clientUnits: readonly Unit[],
  units: readonly Unit[],
): { targets: Map<number, unknown>; moved: number } {
  const targets = new Map<number, unknown>();
  // Only a message that holds breakpoints is searched for them (counted once per message object).
  const marks = clientUnits.map((unit) =>
    countBreakpoints(clientMessages[unit.path[0] as number]) > 0
      ? ownBreakpoint(unit.path, unit.value)
      : undefined,
  );
  if (marks.every((mark) => mark === undefined)) return { targets, moved: 0 };
  const matched = alignUnits(clientUnits, units);
  let moved = 0;
  let before = -1;
  clientUnits.forEach((_, index) => {
    const mark = marks[index];
    const own = matched[index]!;
    if (mark !== undefined) {
      if (own !== -1) {
        if (canHoldBreakpoint(units[own]!)) targets.set(own, mark);
      } else {
        const after = matched.slice(index + 1).find((position) => position !== -1) ?? units.length;
        const target = replacement(units, before, after);
        if (target !== undefined) {
          targets.set(target, mark);
          moved += 1;
        }
      }
    }
    if (own !== -1) before = own;
  });
  return { targets, moved };
}

/** Positions of units by kind and key. */
function positionsOf(units: readonly Unit[]): Map<string, number[]> {
  const positions = new Map<string, number[]>();
  units.forEach((unit, position) => {
    const key = `${unit.kind}\0${unit.key}`;
    const list = positions.get(key);
    if (list) list.push(position);
    else positions.set(key, [position]);
  });
  return positions;
}

/**
 * Each client unit's governed position, or -1, in order. Units that occur once on both sides
 * match first (in increasing order); a unit whose text repeats (the same environment block at
 * the end of every turn) matches only between the unique matches around it. Matching repeated
 * units greedily from the start would pair a folded turn's block with a later turn's copy and
 * leave the later turns, the ones clients mark, with nothing to match.
 */
function alignUnits(clientUnits: readonly Unit[], units: readonly Unit[]): number[] {
  const governed = positionsOf(units);
  const client = positionsOf(clientUnits);
  const keyOf = (unit: Unit) => `${unit.kind}\0${unit.key}`;
  const matched = clientUnits.map(() => -1);
  let last = -1;
  clientUnits.forEach((unit, index) => {
    const key = keyOf(unit);
    const there = governed.get(key);
    if (there?.length !== 1 || client.get(key)?.length !== 1 || there[0]! <= last) return;
    matched[index] = there[0]!;
    last = there[0]!;
  });
  // The repeated ones, each within the gap its unique neighbours leave.
  const after: number[] = [];
  for (let index = clientUnits.length - 1, next = units.length; index >= 0; index -= 1) {
    after[index] = next;
    if (matched[index] !== -1) next = matched[index]!;
  }
  let before = -1;
  clientUnits.forEach((unit, index) => {
    if (matched[index] !== -1) {
      before = matched[index]!;
      return;
    }
    const there = governed.get(keyOf(unit)) ?? [];
    const next = there[firstAbove(there, before)];
    if (next === undefined || next >= after[index]!) return;
    matched[index] = next;
    before = next;
  });
  return matched;
}

/** The index of the first value above `bound` in an ascending list (its length if none). */
function firstAbove(values: readonly number[], bound: number): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (values[middle]! > bound) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** The last unit strictly between two positions that can hold a breakpoint. */
function replacement(units: readonly Unit[], before: number, after: number): number | undefined {
  for (let position = after - 1; position > before; position -= 1)
    if (canHoldBreakpoint(units[position]!)) return position;
  return undefined;
}

/**
 * The `cache_control` a unit carries: a message its own (its blocks are units of their own), a
 * block its own or the first inside it (a text block of a tool result).
 */
function ownBreakpoint(path: Path, value: unknown): unknown {
  const holder = ownHolder(path, value);
  return holder === undefined
    ? undefined
    : (valueAt(value, holder.slice(path.length)) as JsonRecord).cache_control;
}

/** Where the `cache_control` a unit carries (`ownBreakpoint`) sits, from the root of `path`. */
function ownHolder(path: Path, value: unknown): Path | undefined {
  if (path.length === 1) return isRecord(value) && isBreakpoint(value.cache_control) ? path : undefined;
  const holders: Path[] = [];
  collectHolders(value, [], holders);
  const [first] = holders;
  return first === undefined ? undefined : [...path, ...first];
}

/** Thinking blocks and empty text take no breakpoint; a message only when it is a system message or a string. */
function canHoldBreakpoint(unit: Unit): boolean {
  const value = unit.value;
  if (!isRecord(value)) return false;
  if (unit.path.length === 1) return value.role === 'system' || typeof value.content === 'string';
  if (value.type === 'thinking' || value.type === 'redacted_thinking') return false;
  return !(value.type === 'text' && value.text === '');
}

function withBreakpoint(value: unknown, breakpoint: unknown): unknown {
  if (!isRecord(value)) return value;
  // A string content cannot hold a breakpoint: it becomes the one text block it stands for.
  if (typeof value.content === 'string' && value.role !== 'system')
    return { ...value, content: [{ type: 'text', text: value.content, cache_control: breakpoint }] };
  return { ...value, cache_control: breakpoint };
}

function withoutBreakpoint(value: unknown): unknown {
  if (!isRecord(value)) return value;
  const { cache_control: _removed, ...rest } = value;
  return rest;
}

function startsWith(path: Path, prefix: Path): boolean {
  return prefix.length <= path.length && prefix.every((step, index) => path[index] === step);
}

function valueAt(root: unknown, path: Path): unknown {
  let value = root;
  for (const step of path)
    value = isRecord(value) || Array.isArray(value) ? (value as JsonRecord)[step as string] : undefined;
  return value;
}

/** `root` with the value at `path` replaced by `update(value)`, copying only along the path. */
function updateAt(root: unknown, path: Path, update: (value: unknown) => unknown): unknown {
  if (path.length === 0) return update(root);
  const [step, ...rest] = path;
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[step as number] = updateAt(root[step as number], rest, update);
    return copy;
  }
  if (isRecord(root)) return { ...root, [step as string]: updateAt(root[step as string], rest, update) };
  return root;
}
