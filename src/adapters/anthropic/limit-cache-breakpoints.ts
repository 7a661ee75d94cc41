/**
 * Anthropic prompt-cache breakpoints on a governed request. The API takes at most four
 * `cache_control` breakpoints in a request, counted over `tools`, `system` and `messages` (and a
 * top-level `cache_control`, automatic caching, takes one more); a fifth is a 400. A governed
 * view is written from canonical messages whose providerData may still carry the breakpoints an
 * earlier request placed on them, and a fold can swallow the block the client marked. So, once
 * the view is written:
 *
 * 1. A client breakpoint whose block governance replaced moves to the block that took its place:
 *    the last block written where the replaced ones stood (a fold's summary, a folded result).
 *    When nothing took their place (a prune without tombstone), it goes with them.
 * 2. The messages then keep at most as many breakpoints as the client's request allows: its own
 *    count, capped at four, less the breakpoints outside `messages` (tools, system, top level),
 *    which governance never changes and which stay as they are. Past that, the earliest go and
 *    the latest stay: a breakpoint marks the end of a cached prefix, the latest one covers the
 *    longest prefix and is where the client's next request will read the cache, while earlier
 *    ones in the history are those that earlier requests placed (each read of a long prefix
 *    also finds the shorter entries behind it, within the API's look-back of about twenty
 *    blocks).
 *
 * Blocks are matched between the client's messages and the governed ones by what they hold
 * (text, ids, tool result content), in order; nothing is ever added beyond the client's count.
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
  /** Client breakpoints moved onto the block that replaced theirs. */
  moved: number;
  /** Breakpoints taken off the governed messages to stay within the limit. */
  removed: number;
}

type Path = ReadonlyArray<string | number>;

/**
 * The governed `system` and `messages` with breakpoints moved and limited as the module says.
 * Nothing is mutated: changed messages and blocks are copies.
 */
export function limitCacheBreakpoints(
  client: CacheBreakpointBody,
  governed: { system?: unknown; messages: unknown[] },
): LimitedBreakpoints {
  const clientMessages = Array.isArray(client.messages) ? client.messages : [];
  const outside =
    countBreakpoints(client.tools) +
    countBreakpoints(governed.system) +
    (isBreakpoint(client.cache_control) ? 1 : 0);
  const clientTotal =
    countBreakpoints(client.tools) +
    countBreakpoints(client.system) +
    countBreakpoints(clientMessages) +
    (isBreakpoint(client.cache_control) ? 1 : 0);
  const allowed = Math.max(0, Math.min(clientTotal, MAX_CACHE_BREAKPOINTS) - outside);

  const { messages: withMoved, moved } = moveReplacedBreakpoints(clientMessages, governed.messages);
  const holders: Path[] = [];
  collectHolders(withMoved, [], holders);
  let messages = withMoved;
  const removed = Math.max(0, holders.length - allowed);
  for (const path of holders.slice(0, removed))
    messages = updateAt(messages, path, withoutBreakpoint) as unknown[];
  return { system: governed.system, messages, moved, removed };
}

/** Breakpoints anywhere inside a value: objects with a non-null `cache_control` object. */
export function countBreakpoints(value: unknown): number {
  const holders: Path[] = [];
  collectHolders(value, [], holders);
  return holders.length;
}

function isBreakpoint(value: unknown): boolean {
  return isRecord(value);
}

function collectHolders(value: unknown, path: Path, out: Path[]): void {
  if (Array.isArray(value)) {
    value.forEach((inner, index) => {
      collectHolders(inner, [...path, index], out);
    });
    return;
  }
  if (!isRecord(value)) return;
  if (isBreakpoint(value.cache_control)) out.push(path);
  for (const [key, inner] of Object.entries(value)) {
    if (key !== 'cache_control' && typeof inner === 'object' && inner !== null)
      collectHolders(inner, [...path, key], out);
  }
}

/** One place a breakpoint can sit: a message (its own `cache_control`) or a content block. */
interface Unit {
  path: Path;
  value: unknown;
  /** What it holds, to tell the same block in both bodies. */
  key: string;
}

/** Every message-level and top-level block unit of a message list, in order. */
function unitsOf(messages: readonly unknown[]): Unit[] {
  const units: Unit[] = [];
  messages.forEach((message, index) => {
    if (!isRecord(message)) return;
    const role = String(message.role);
    if (typeof message.content === 'string') {
      units.push({ path: [index], value: message, key: `${role}\u0000${message.content}` });
      return;
    }
    // A system message can hold a breakpoint itself; an empty message is a place all the same.
    if (role === 'system' || !Array.isArray(message.content) || message.content.length === 0) {
      const key = `${role}\u0000${JSON.stringify(message.content ?? null, dropBreakpoints)}`;
      units.push({ path: [index], value: message, key });
    }
    if (!Array.isArray(message.content)) return;
    message.content.forEach((block, blockIndex) => {
      units.push({ path: [index, 'content', blockIndex], value: block, key: blockKey(block) });
    });
  });
  return units;
}

/** What a block holds: its text or ids where it has them, else its JSON without breakpoints. */
function blockKey(block: unknown): string {
  if (!isRecord(block)) return JSON.stringify(block);
  switch (block.type) {
    case 'text':
      return `text\u0000${String(block.text)}`;
    case 'tool_use':
      return `tool_use\u0000${String(block.id)}`;
    case 'thinking':
      return `thinking\u0000${String(block.signature)}`;
    case 'redacted_thinking':
      return `redacted_thinking\u0000${String(block.data)}`;
    case 'tool_result': {
      const content =
        typeof block.content === 'string'
          ? block.content
          : JSON.stringify(block.content ?? null, dropBreakpoints);
      return `tool_result\u0000${String(block.tool_use_id)}\u0000${content}`;
    }
    default:
      return JSON.stringify(block, dropBreakpoints);
  }
}

function dropBreakpoints(key: string, value: unknown): unknown {
  return key === 'cache_control' ? undefined : value;
}

/**
 * Move each client breakpoint whose block is gone from the governed messages onto the last
 * governed block between the blocks matched before and after it (the block that took its place).
 */
function moveReplacedBreakpoints(
  clientMessages: readonly unknown[],
  governedMessages: unknown[],
): { messages: unknown[]; moved: number } {
  const clientUnits = unitsOf(clientMessages);
  const marked = clientUnits.filter((unit) => ownBreakpoint(unit) !== undefined);
  if (marked.length === 0) return { messages: governedMessages, moved: 0 };
  const governedUnits = unitsOf(governedMessages);
  const positions = new Map<string, number[]>();
  governedUnits.forEach((unit, position) => {
    const list = positions.get(unit.key);
    if (list) list.push(position);
    else positions.set(unit.key, [position]);
  });
  // Each client unit's governed position (or -1): the first unused one after the last match.
  const matched: number[] = [];
  let last = -1;
  for (const unit of clientUnits) {
    const next = (positions.get(unit.key) ?? []).find((position) => position > last);
    matched.push(next ?? -1);
    if (next !== undefined) last = next;
  }
  let messages = governedMessages;
  let moved = 0;
  clientUnits.forEach((unit, index) => {
    const breakpoint = ownBreakpoint(unit);
    if (breakpoint === undefined || matched[index] !== -1) return;
    const before = Math.max(-1, ...matched.slice(0, index));
    const after = matched.slice(index + 1).find((position) => position !== -1) ?? governedUnits.length;
    for (let position = after - 1; position > before; position -= 1) {
      const target = governedUnits[position]!;
      if (!canHoldBreakpoint(target)) continue;
      if (ownBreakpoint({ ...target, value: valueAt(messages, target.path) }) === undefined) {
        messages = updateAt(messages, target.path, (value) => withBreakpoint(value, breakpoint)) as unknown[];
        moved += 1;
      }
      return;
    }
  });
  return { messages, moved };
}

/**
 * The `cache_control` a unit carries: a message its own (its blocks are units of their own), a
 * block its own or the first inside it (a text block of a tool result).
 */
function ownBreakpoint(unit: Unit): unknown {
  const { value } = unit;
  if (unit.path.length === 1)
    return isRecord(value) && isBreakpoint(value.cache_control) ? value.cache_control : undefined;
  const holders: Path[] = [];
  collectHolders(value, [], holders);
  const [first] = holders;
  if (first === undefined) return undefined;
  const holder = valueAt(value, first);
  return isRecord(holder) ? holder.cache_control : undefined;
}

/** Thinking blocks and empty text take no breakpoint; a message only when it is a system message. */
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
